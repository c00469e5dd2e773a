// Package relist is the e2e run's check of deploy/base's memory limit
// under a forced relist (section 7 of docs/e2e.md): the S2 shape loaded,
// every informer made to list again, ours never OOM-killed, stock beside
// it at the same limit reported the same way.
package relist

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/internal/procstat"
	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// section is the check's section of the report.
const section = "7. the memory limit under a forced relist"

// s2Namespace holds the S2 shape: headless services of 10 endpoints each,
// all in one namespace, as make bench's S2 has them.
const s2Namespace = "s2"

// Relist is the check on a cluster.
type Relist struct {
	*scenario.Env
	// services is how many headless services of the S2 shape it loads
	// (-relist-services).
	services int
}

// New is the check on env's cluster, with services of the S2 shape.
func New(env *scenario.Env, services int) *Relist { return &Relist{Env: env, services: services} }

// memPod is a DNS pod measured through the relist.
type memPod struct {
	who      string // ours or stock
	name     string
	pid      int
	cgroup   string // its container's memory cgroup
	steady   int64  // RSS before the outage
	restarts int32
}

// Run loads the S2 shape, forces every informer to list again (the API
// server stopped, etcd compacted, the API server started) and checks that
// deploy/base's memory limit holds: ours is never OOM-killed. Stock runs
// beside at the same limit and is reported the same way.
func (r *Relist) Run(ctx context.Context) error {
	limit, err := r.deploy(ctx)
	if err != nil {
		return err
	}
	if err := r.loadServed(ctx); err != nil {
		return err
	}
	pods, err := r.memPods(ctx)
	if err != nil {
		return err
	}
	relistsBefore, err := r.ourRelists(ctx)
	if err != nil {
		return err
	}
	for i := range pods {
		p := &pods[i]
		if p.steady, _, err = procstat.RSS(p.pid); err != nil {
			return err
		}
		if err := procstat.ResetPeak(p.pid); err != nil {
			return err
		}
		_ = os.WriteFile(filepath.Join(p.cgroup, "memory.max_usage_in_bytes"), []byte("0"), 0o644)
	}
	down := time.Now()
	rev, err := r.Cluster.ForceRelist(ctx)
	if err != nil {
		return err
	}
	r.Logf("relist: API server down %.0f s, etcd compacted at revision %d", time.Since(down).Seconds(), rev)
	err = cluster.WaitFor(ctx, 3*time.Minute, "every replica of ours relisted its EndpointSlices", func() error {
		after, err := r.ourRelists(ctx)
		if err != nil {
			return err
		}
		for pod, n := range after {
			if n <= relistsBefore[pod] {
				return fmt.Errorf("%s: %v relists, %v before", pod, n, relistsBefore[pod])
			}
		}
		return nil
	})
	r.Report.Assert(section, "each replica of ours relisted its EndpointSlices (coredns_watchcache_relists_total)", err == nil, "%s", scenario.ErrText(err))
	if err := scenario.Sleep(ctx, 20*time.Second); err != nil {
		return err
	}
	return r.reportMemory(ctx, pods, limit)
}

// deploy applies deploy/base and stock beside it at the same memory
// limit, and returns that limit.
func (r *Relist) deploy(ctx context.Context) (string, error) {
	base, err := cluster.Overlay("base", "base", r.OurTag, "")
	if err != nil {
		return "", err
	}
	if _, err := r.Cluster.Kubectl(ctx, nil, "apply", "-k", base); err != nil {
		return "", err
	}
	if err := r.Cluster.WaitRollout(ctx, scenario.DNSNamespace, scenario.DNSDeploy, 4*time.Minute); err != nil {
		return "", err
	}
	d, err := r.Cluster.Client().AppsV1().Deployments(scenario.DNSNamespace).Get(ctx, scenario.DNSDeploy, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	limit := d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()
	repl := r.Placeholders()
	repl["STOCK_VIP"], repl["STOCK_LIMIT"] = cluster.StockVIP, limit
	if err := r.Cluster.ApplyManifest(ctx, manifests.StockBeside, repl); err != nil {
		return "", err
	}
	if err := r.Cluster.WaitRollout(ctx, scenario.DNSNamespace, "coredns-stock", 2*time.Minute); err != nil {
		return "", err
	}
	return limit, nil
}

// loadServed loads the S2 shape and waits until both servers answer its
// last service.
func (r *Relist) loadServed(ctx context.Context) error {
	start := time.Now()
	if err := r.loadS2(ctx, r.services); err != nil {
		return err
	}
	last := fmt.Sprintf("s2-%d.%s.svc.cluster.local.", r.services-1, s2Namespace)
	for _, vip := range []string{cluster.DNSVIP, cluster.StockVIP} {
		err := cluster.WaitFor(ctx, 3*time.Minute, vip+" answers the last S2 service", func() error {
			m, err := scenario.Ask(net.JoinHostPort(vip, "53"), "udp", last, dns.TypeA)
			if err != nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 10 {
				return fmt.Errorf("%s", scenario.Summarize(m, err))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	r.Report.Figure("S2 shape loaded for the relist check", fmt.Sprintf("%d headless services × 10 endpoints in one namespace, written and served in %.0f s",
		r.services, time.Since(start).Seconds()))
	return nil
}

// reportMemory reads each pod's peaks and restarts after the relist,
// checks ours and tabulates both servers.
func (r *Relist) reportMemory(ctx context.Context, pods []memPod, limit string) error {
	var rows [][]string
	for _, p := range pods {
		_, peak, _ := procstat.RSS(p.pid)
		cgPeak := cluster.ReadInt(filepath.Join(p.cgroup, "memory.max_usage_in_bytes"))
		pod, err := r.Cluster.Client().CoreV1().Pods(scenario.DNSNamespace).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs := pod.Status.ContainerStatuses[0]
		oom := cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.Reason == "OOMKilled"
		restarts := cs.RestartCount - p.restarts
		rows = append(rows, []string{p.who, p.name, scenario.MiB(p.steady), scenario.MiB(peak), scenario.MiB(cgPeak), limit,
			fmt.Sprint(restarts), fmt.Sprint(oom)})
		if p.who == "ours" {
			r.Report.Assert(section, p.name+" (ours): not restarted, not OOM-killed", restarts == 0 && !oom,
				"%d restarts, OOMKilled %v, peak RSS %s of %s", restarts, oom, scenario.MiB(peak), limit)
		}
	}
	r.Report.Table(fmt.Sprintf("Memory through a forced relist, S2 shape at %d services (RSS from /proc, its peak VmHWM reset just before the outage; cgroup peak: the container's memory.max_usage_in_bytes, reset then too, the figure the limit is enforced on)", r.services),
		[]string{"server", "pod", "RSS before", "peak RSS", "cgroup peak", "limit", "restarts", "OOMKilled"}, rows)
	return nil
}

// memPods finds ours and stock's running pods with their process and cgroup.
func (r *Relist) memPods(ctx context.Context) ([]memPod, error) {
	var out []memPod
	for _, sel := range []struct{ who, key, val string }{{"ours", "k8s-app", "kube-dns"}, {"stock", "app", "coredns-stock"}} {
		pods, err := r.Cluster.PodsOf(ctx, scenario.DNSNamespace, map[string]string{sel.key: sel.val})
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			pid, err := r.Cluster.ContainerPID(ctx, p)
			if err != nil {
				return nil, err
			}
			cg, err := cluster.MemoryCgroup(pid)
			if err != nil {
				return nil, err
			}
			out = append(out, memPod{who: sel.who, name: p.Name, pid: pid, cgroup: cg, restarts: p.Status.ContainerStatuses[0].RestartCount})
		}
	}
	return out, nil
}

// ourRelists reads each of our pods' EndpointSlice relist counter.
func (r *Relist) ourRelists(ctx context.Context) (map[string]float64, error) {
	pods, err := r.DNSPods(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, p := range pods {
		v, err := scenario.ScrapeSum(ctx, "http://"+p.Status.PodIP+":9153/metrics", `coredns_watchcache_relists_total{resource="endpointslices"}`)
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	return out, nil
}

// loadS2 writes n headless services with an EndpointSlice of 10 ready
// endpoints each, with 8 writers.
func (r *Relist) loadS2(ctx context.Context, n int) error {
	c := r.Cluster.Client()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s2Namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := r.createS2Service(ctx, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// createS2Service writes service i and its slice; endpoint addresses run
// through 198.18.64.0-198.18.255.255 (data only: nothing listens there).
func (r *Relist) createS2Service(ctx context.Context, i int) error {
	name := fmt.Sprintf("s2-%d", i)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if _, err := r.Cluster.Client().CoreV1().Services(s2Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s: %w", name, err)
	}
	ready := true
	port, proto := int32(80), corev1.ProtocolTCP
	portName := "http"
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
	}
	for j := range 10 {
		k := 64*256 + (i*10+j)%(192*256)
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("198.18.%d.%d", k/256, k%256)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	if _, err := r.Cluster.Client().DiscoveryV1().EndpointSlices(s2Namespace).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create endpointslice %s: %w", name, err)
	}
	return nil
}
