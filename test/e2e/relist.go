package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/procstat"
)

// s2Namespace holds the S2 shape: headless services of 10 endpoints each,
// all in one namespace, as make bench's S2 has them.
const s2Namespace = "s2"

// memPod is a DNS pod measured through the relist.
type memPod struct {
	who      string // ours or stock
	name     string
	pid      int
	cgroup   string // its container's memory cgroup
	steady   int64  // RSS before the outage
	restarts int32
}

// checkRelist loads the S2 shape, forces every informer to list again (the
// API server stopped, etcd compacted, the API server started) and checks
// that deploy/base's memory limit holds: ours is never OOM-killed. Stock
// runs beside at the same limit and is reported the same way.
func (e *e2e) checkRelist(ctx context.Context) error {
	const section = "7. the memory limit under a forced relist"
	base, err := overlay("base", "base", e.ourTag, "")
	if err != nil {
		return err
	}
	if _, err := e.n.kubectlRun(ctx, nil, "apply", "-k", base); err != nil {
		return err
	}
	if err := e.n.waitRollout(ctx, dnsNS, dnsDeploy, 4*time.Minute); err != nil {
		return err
	}
	d, err := e.n.client().AppsV1().Deployments(dnsNS).Get(ctx, dnsDeploy, metav1.GetOptions{})
	if err != nil {
		return err
	}
	limit := d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory()
	repl := e.placeholders()
	repl["STOCK_VIP"], repl["STOCK_LIMIT"] = stockVIP, limit.String()
	if err := e.n.applyManifest(ctx, stockBesideManifest, repl); err != nil {
		return err
	}
	if err := e.n.waitRollout(ctx, dnsNS, "coredns-stock", 2*time.Minute); err != nil {
		return err
	}
	start := time.Now()
	if err := e.loadS2(ctx, e.o.relistSvc); err != nil {
		return err
	}
	last := fmt.Sprintf("s2-%d.%s.svc.cluster.local.", e.o.relistSvc-1, s2Namespace)
	for _, vip := range []string{dnsVIP, stockVIP} {
		err := waitFor(ctx, 3*time.Minute, vip+" answers the last S2 service", func() error {
			m, err := dnsAsk(net.JoinHostPort(vip, "53"), "udp", last, dns.TypeA)
			if err != nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 10 {
				return fmt.Errorf("%s", summarize(m, err))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	e.rep.figure("S2 shape loaded for the relist check", fmt.Sprintf("%d headless services × 10 endpoints in one namespace, written and served in %.0f s",
		e.o.relistSvc, time.Since(start).Seconds()))
	pods, err := e.memPods(ctx)
	if err != nil {
		return err
	}
	relistsBefore, err := e.ourRelists(ctx)
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
	if err := e.n.api.StopAPIServer(); err != nil {
		return err
	}
	rev, err := e.n.api.CompactEtcd(ctx)
	if err != nil {
		return err
	}
	if err := e.n.api.StartAPIServer(ctx); err != nil {
		return err
	}
	e.logf("relist: API server down %.0f s, etcd compacted at revision %d", time.Since(down).Seconds(), rev)
	err = waitFor(ctx, 3*time.Minute, "every replica of ours relisted its EndpointSlices", func() error {
		after, err := e.ourRelists(ctx)
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
	e.rep.assert(section, "each replica of ours relisted its EndpointSlices (coredns_watchcache_relists_total)", err == nil, "%s", errText(err))
	if err := sleepCtx(ctx, 20*time.Second); err != nil {
		return err
	}
	var rows [][]string
	for _, p := range pods {
		_, peak, _ := procstat.RSS(p.pid)
		cgPeak := readInt(filepath.Join(p.cgroup, "memory.max_usage_in_bytes"))
		pod, err := e.n.client().CoreV1().Pods(dnsNS).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs := pod.Status.ContainerStatuses[0]
		oom := cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.Reason == "OOMKilled"
		restarts := cs.RestartCount - p.restarts
		rows = append(rows, []string{p.who, p.name, mib(p.steady), mib(peak), mib(cgPeak), limit.String(),
			fmt.Sprint(restarts), fmt.Sprint(oom)})
		if p.who == "ours" {
			e.rep.assert(section, p.name+" (ours): not restarted, not OOM-killed", restarts == 0 && !oom,
				"%d restarts, OOMKilled %v, peak RSS %s of %s", restarts, oom, mib(peak), limit.String())
		}
	}
	e.rep.table(fmt.Sprintf("Memory through a forced relist, S2 shape at %d services (RSS from /proc, its peak VmHWM reset just before the outage; cgroup peak: the container's memory.max_usage_in_bytes, reset then too, the figure the limit is enforced on)", e.o.relistSvc),
		[]string{"server", "pod", "RSS before", "peak RSS", "cgroup peak", "limit", "restarts", "OOMKilled"}, rows)
	return nil
}

// memPods finds ours and stock's running pods with their process and cgroup.
func (e *e2e) memPods(ctx context.Context) ([]memPod, error) {
	var out []memPod
	for _, sel := range []struct{ who, key, val string }{{"ours", "k8s-app", "kube-dns"}, {"stock", "app", "coredns-stock"}} {
		pods, err := e.n.podsOf(ctx, dnsNS, map[string]string{sel.key: sel.val})
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			pid, err := e.containerPID(ctx, p)
			if err != nil {
				return nil, err
			}
			cg, err := memoryCgroup(pid)
			if err != nil {
				return nil, err
			}
			out = append(out, memPod{who: sel.who, name: p.Name, pid: pid, cgroup: cg, restarts: p.Status.ContainerStatuses[0].RestartCount})
		}
	}
	return out, nil
}

// memoryCgroup is the directory of a process's v1 memory cgroup.
func memoryCgroup(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",memory,") {
			return filepath.Join(cgroupFS, "memory", parts[2]), nil
		}
	}
	return "", fmt.Errorf("process %d has no memory cgroup", pid)
}

func readInt(path string) int64 {
	b, _ := os.ReadFile(path)
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// ourRelists reads each of our pods' EndpointSlice relist counter.
func (e *e2e) ourRelists(ctx context.Context) (map[string]float64, error) {
	pods, err := e.dnsPods(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, p := range pods {
		v, err := scrapeSum(ctx, "http://"+p.Status.PodIP+":9153/metrics", `coredns_watchcache_relists_total{resource="endpointslices"}`)
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	return out, nil
}

// loadS2 writes n headless services with an EndpointSlice of 10 ready
// endpoints each, with 8 writers.
func (e *e2e) loadS2(ctx context.Context, n int) error {
	c := e.n.client()
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
				if err := createS2Service(ctx, e, i); err != nil {
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
func createS2Service(ctx context.Context, e *e2e, i int) error {
	name := fmt.Sprintf("s2-%d", i)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if _, err := e.n.client().CoreV1().Services(s2Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
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
	if _, err := e.n.client().DiscoveryV1().EndpointSlices(s2Namespace).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create endpointslice %s: %w", name, err)
	}
	return nil
}
