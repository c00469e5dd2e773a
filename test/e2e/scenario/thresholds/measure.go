package thresholds

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/internal/procstat"
	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/scenario"
	"github.com/schemadns/schemadns/test/e2e/scenario/loadlog"
)

// The bounds of one server's measurement at full S5 (about 7 minutes
// when all goes well).
const (
	// rolloutTimeout: the pods start, list S5 and pass their readiness.
	rolloutTimeout = 10 * time.Minute
	// answerTimeout: each pod answers the last service and pod.
	answerTimeout = 5 * time.Minute
	// steadyFor: the client resolves before the memory is read.
	steadyFor = 30 * time.Second
	// relistTimeout: after the API server is ready again, every informer
	// of every pod has listed.
	relistTimeout = 10 * time.Minute
	// settleFor: after the last list, while the new lists replace the
	// old and the peak is reached.
	settleFor = 60 * time.Second
	// oomGiveUp: OOM kills per replica before it became ready after which
	// the server is taken as unable to start at its limit.
	oomGiveUp = 3
)

// relistResult is one server's measurement.
type relistResult struct {
	server relistServer
	limit  string // the Deployment's, as applied
	// notReady says why the server never served S5; the rest of the
	// measurement is then skipped.
	notReady string
	synced   time.Duration // from the apply to every pod answering S5
	pods     []*dnsPodMem
	// outage is from the API server's stop to its being ready again;
	// relisted from then until every informer of every pod had listed
	// (0: not seen in relistTimeout).
	outage, relisted time.Duration
	// apiPeak is the restarted API server's peak RSS, read after settling.
	apiPeak int64
	// client counts the lookups from the API server's stop to the end.
	client loadlog.Counts
}

// dnsPodMem is one DNS pod through the measurement.
type dnsPodMem struct {
	name, ip, uid string
	containerID   string // at the steady reading
	restarts0     int32
	cgroup        string // its container's memory cgroup; the pod's is its parent
	steady, rss   int64  // usage_in_bytes and RSS at the steady reading
	// peak is the container cgroup's max_usage_in_bytes since the reset
	// before the outage; the pod cgroup's when the container was replaced.
	peak        int64
	peakFromPod bool
	// oomKills and restarts are counted from the apply (containerd's OOM
	// events, kubelet's restart count).
	oomKills, restarts int
	// relisted says, per resource, how the list after the outage was
	// seen: "metric and audit", "audit", or "" (not seen).
	relisted map[string]string
}

// measureRelist deploys one server alone, lets the client resolve
// through it, reads its memory, forces every informer to list again and
// reads what that cost.
func (th *Thresholds) measureRelist(ctx context.Context, srv relistServer) error {
	if th.thr == nil {
		return fmt.Errorf("S5 was not loaded")
	}
	res := &relistResult{server: srv}
	th.thr.results = append(th.thr.results, res)
	if err := th.removeDNS(ctx); err != nil {
		return err
	}
	oom, err := th.Cluster.WatchOOM(ctx)
	if err != nil {
		return err
	}
	stopped := false
	stopOOM := func() map[string]int {
		if stopped {
			return oom.Counts()
		}
		stopped = true
		return oom.Stop()
	}
	defer stopOOM()
	applied := time.Now()
	if err := th.deployServer(ctx, srv, res); err != nil {
		return err
	}
	if err := th.waitServing(ctx, oom); err != nil {
		res.notReady = err.Error()
		th.Logf("%s never served S5: %v", srv.name, err)
		th.collectPods(ctx, res, stopOOM())
		th.assertRelist(res)
		return nil
	}
	res.synced = time.Since(applied)
	th.Logf("%s: serving S5 %.0f s after the apply", srv.name, res.synced.Seconds())
	if err := th.startClient(ctx); err != nil {
		return err
	}
	defer th.deleteClient(ctx)
	if err := scenario.Sleep(ctx, steadyFor); err != nil {
		return err
	}
	if err := th.readSteady(ctx, res); err != nil {
		return err
	}
	before := th.ourRelistCounts(ctx, res)
	offset := cluster.AuditSize()
	down := time.Now()
	if _, err := th.Cluster.ForceRelist(ctx); err != nil {
		return err
	}
	res.outage = time.Since(down)
	th.Logf("%s: API server back after %.0f s", srv.name, res.outage.Seconds())
	back := time.Now()
	err = cluster.WaitFor(ctx, relistTimeout, "every informer of every pod listed again", func() error {
		return th.relistSeen(ctx, res, before, offset)
	})
	if err == nil {
		res.relisted = time.Since(back)
		th.Logf("%s: every informer relisted %.0f s after the API server was ready", srv.name, res.relisted.Seconds())
	} else {
		th.Logf("%s: %v", srv.name, err)
	}
	if err := scenario.Sleep(ctx, settleFor); err != nil {
		return err
	}
	if pid, err := cluster.ControlPlanePID("kube-apiserver"); err == nil {
		_, res.apiPeak, _ = procstat.RSS(pid)
	}
	th.collectPods(ctx, res, stopOOM())
	if log, err := th.Cluster.Logs(ctx, clientNS, "relist-client"); err == nil {
		res.client = loadlog.Parse(log).Count(down, time.Now())
	} else {
		th.Report.Fail("relist: "+srv.name, err.Error())
	}
	th.assertRelist(res)
	return nil
}

// removeDNS deletes the cluster DNS Deployment, if any, and waits until
// its pods are gone, so that the next server runs alone.
func (th *Thresholds) removeDNS(ctx context.Context) error {
	err := th.Cluster.Client().AppsV1().Deployments(scenario.DNSNamespace).Delete(ctx, scenario.DNSDeploy, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return cluster.WaitFor(ctx, 3*time.Minute, "the DNS pods gone", func() error {
		pods, err := th.Cluster.PodsOf(ctx, scenario.DNSNamespace, map[string]string{"k8s-app": "kube-dns"})
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			return fmt.Errorf("%d left", len(pods))
		}
		return nil
	})
}

// deployServer applies the server as an operator would: ours through a
// kustomization of its deploy/ tree (the tag, the kube-dns address, and
// the limit if one is set), stock as kubeadm's manifests.
func (th *Thresholds) deployServer(ctx context.Context, srv relistServer, res *relistResult) error {
	if srv.ours() {
		extra := ""
		if srv.limit != "" {
			extra = fmt.Sprintf(`  - target: {kind: Deployment, name: coredns}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/resources/limits/memory
        value: %s
`, srv.limit)
		}
		dir, err := cluster.Overlay("thresholds-"+strings.NewReplacer("/", "-", ".", "-").Replace(srv.tree)+"-"+srv.limit, srv.tree, th.OurTag, extra)
		if err != nil {
			return err
		}
		if _, err := th.Cluster.Kubectl(ctx, nil, "apply", "-k", dir); err != nil {
			return err
		}
	} else if err := th.Cluster.ApplyManifest(ctx, manifests.StockCoreDNS, th.Placeholders()); err != nil {
		return err
	}
	d, err := th.Cluster.Client().AppsV1().Deployments(scenario.DNSNamespace).Get(ctx, scenario.DNSDeploy, metav1.GetOptions{})
	if err != nil {
		return err
	}
	res.limit = d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()
	return nil
}

// waitServing waits until the Deployment has rolled out and every pod
// answers the last service and the last pod of S5; it gives up early on
// a server OOM-killed again and again before it became ready.
func (th *Thresholds) waitServing(ctx context.Context, oom *cluster.OOMWatch) error {
	deadline := time.Now().Add(rolloutTimeout)
	replicas := 1
	if d, err := th.Cluster.Client().AppsV1().Deployments(scenario.DNSNamespace).Get(ctx, scenario.DNSDeploy, metav1.GetOptions{}); err == nil && d.Spec.Replicas != nil {
		replicas = int(*d.Spec.Replicas)
	}
	for {
		err := th.Cluster.RolloutDone(ctx, scenario.DNSNamespace, scenario.DNSDeploy)
		if err == nil {
			break
		}
		kills := 0
		for _, n := range oom.Counts() {
			kills += n
		}
		switch {
		case kills >= oomGiveUp*replicas:
			return fmt.Errorf("OOM-killed %d times before it became ready (%v)", kills, err)
		case time.Now().After(deadline):
			return fmt.Errorf("not rolled out in %s: %v (%d OOM kills)", rolloutTimeout, err, kills)
		}
		if err := scenario.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	pods, err := th.DNSPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		addr := net.JoinHostPort(p.Status.PodIP, "53")
		err := cluster.WaitFor(ctx, answerTimeout, p.Name+" answers S5's last service and pod", func() error {
			for _, q := range []struct{ name, want string }{{th.thr.probe, th.thr.probeIP}, {th.thr.podName, th.thr.podIP}} {
				m, err := scenario.Ask(addr, "udp", q.name, dns.TypeA)
				if err != nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || !strings.HasSuffix(m.Answer[0].String(), "\t"+q.want) {
					return fmt.Errorf("%s: %s", q.name, scenario.Summarize(m, err))
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startClient runs the client pod through the kube-dns VIP.
func (th *Thresholds) startClient(ctx context.Context) error {
	quoted := make([]string, len(th.thr.names))
	for i, n := range th.thr.names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	repl := th.Placeholders()
	repl["NAMES"] = strings.Join(quoted, ", ")
	if err := th.Cluster.ApplyManifest(ctx, manifests.RelistClient, repl); err != nil {
		return err
	}
	return th.Cluster.WaitPodsReady(ctx, clientNS, "relist-client")
}

// deleteClient removes the client pod and waits until it is gone.
func (th *Thresholds) deleteClient(ctx context.Context) {
	pods := th.Cluster.Client().CoreV1().Pods(clientNS)
	if err := pods.Delete(ctx, "relist-client", metav1.DeleteOptions{}); err != nil {
		return
	}
	_ = cluster.WaitFor(ctx, time.Minute, "the client gone", func() error {
		if _, err := pods.Get(ctx, "relist-client", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// steadySamples are the readings of a pod's memory averaged into its
// steady figure, a second apart: one reading may fall just before or
// after a garbage collection.
const steadySamples = 5

// readSteady reads each DNS pod's memory before the outage and resets
// the peaks, its container's and its pod's.
func (th *Thresholds) readSteady(ctx context.Context, res *relistResult) error {
	pods, err := th.DNSPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		pid, err := th.Cluster.ContainerPID(ctx, p)
		if err != nil {
			return err
		}
		cg, err := cluster.MemoryCgroup(pid)
		if err != nil {
			return err
		}
		m := &dnsPodMem{name: p.Name, ip: p.Status.PodIP, uid: string(p.UID), cgroup: cg,
			containerID: p.Status.ContainerStatuses[0].ContainerID, restarts0: p.Status.ContainerStatuses[0].RestartCount}
		res.pods = append(res.pods, m)
	}
	for i := range steadySamples {
		if i > 0 {
			if err := scenario.Sleep(ctx, time.Second); err != nil {
				return err
			}
		}
		for _, m := range res.pods {
			m.steady += cluster.ReadInt(filepath.Join(m.cgroup, "memory.usage_in_bytes")) / steadySamples
		}
	}
	for _, m := range res.pods {
		if pid, err := cluster.CgroupPID(m.cgroup); err == nil {
			m.rss, _, _ = procstat.RSS(pid)
		}
		for _, dir := range []string{m.cgroup, filepath.Dir(m.cgroup)} {
			_ = os.WriteFile(filepath.Join(dir, "memory.max_usage_in_bytes"), []byte("0"), 0o644)
		}
	}
	return nil
}

// ourRelistCounts reads each of our pods' relist counters, by pod and
// resource; nil for stock, which has none.
func (th *Thresholds) ourRelistCounts(ctx context.Context, res *relistResult) map[string]map[string]float64 {
	if !res.server.ours() {
		return nil
	}
	out := map[string]map[string]float64{}
	for _, p := range res.pods {
		out[p.name] = th.relistCounters(ctx, p.ip, res.server.informers)
	}
	return out
}

// relistCounters scrapes coredns_watchcache_relists_total per resource;
// a resource that could not be read is left out.
func (th *Thresholds) relistCounters(ctx context.Context, ip string, resources []string) map[string]float64 {
	out := map[string]float64{}
	for _, r := range resources {
		v, err := scenario.ScrapeSum(ctx, "http://"+net.JoinHostPort(ip, "9153")+"/metrics", fmt.Sprintf(`coredns_watchcache_relists_total{resource=%q}`, r))
		if err == nil {
			out[r] = v
		}
	}
	return out
}

// relistSeen checks that every informer of every pod measured listed
// after offset in the audit log, and for ours that its counter rose too.
func (th *Thresholds) relistSeen(ctx context.Context, res *relistResult, before map[string]map[string]float64, offset int64) error {
	lists, err := cluster.AuditLists(offset)
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range res.pods {
		p.relisted = map[string]string{}
		var after map[string]float64
		if before != nil {
			after = th.relistCounters(ctx, p.ip, res.server.informers)
		}
		for _, r := range res.server.informers {
			audited := lists[p.ip][r] > 0
			counted := after != nil && after[r] > before[p.name][r]
			switch {
			case audited && counted:
				p.relisted[r] = "metric and audit"
			case audited:
				p.relisted[r] = "audit"
			case counted:
				p.relisted[r] = "metric"
			default:
				missing = append(missing, p.name+" "+r)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no list since the outage: %s", strings.Join(missing, ", "))
	}
	return nil
}

// collectPods reads each DNS pod's peak, OOM kills and restarts. Pods
// not read at a steady time (a server that never became ready) are
// added, their peaks since they started.
func (th *Thresholds) collectPods(ctx context.Context, res *relistResult, ooms map[string]int) {
	pods, err := th.Cluster.PodsOf(ctx, scenario.DNSNamespace, map[string]string{"k8s-app": "kube-dns"})
	if err != nil {
		th.Report.Fail("relist: "+res.server.name, err.Error())
		return
	}
	byName := map[string]*dnsPodMem{}
	for _, m := range res.pods {
		byName[m.name] = m
	}
	for _, p := range pods {
		m := byName[p.Name]
		if m == nil {
			m = &dnsPodMem{name: p.Name, ip: p.Status.PodIP, uid: string(p.UID)}
			res.pods = append(res.pods, m)
		}
		var cs corev1.ContainerStatus
		if len(p.Status.ContainerStatuses) > 0 {
			cs = p.Status.ContainerStatuses[0]
		}
		m.restarts = int(cs.RestartCount - m.restarts0)
		m.oomKills = ooms[p.Name]
		if last := cs.LastTerminationState.Terminated; last != nil && last.Reason == "OOMKilled" && m.oomKills == 0 && m.restarts > 0 {
			m.oomKills = 1 // kubelet saw one the runtime's events did not show
		}
		if m.cgroup != "" && cs.ContainerID == m.containerID {
			m.peak = cluster.ReadInt(filepath.Join(m.cgroup, "memory.max_usage_in_bytes"))
		} else if dir := cluster.PodCgroup(m.uid); dir != "" {
			m.peak, m.peakFromPod = cluster.ReadInt(filepath.Join(dir, "memory.max_usage_in_bytes")), true
		}
	}
}

// assertRelist records the run's checks for one server: every informer
// relisted, and ours never OOM-killed nor restarted. Stock's kills are
// the figure the comparison is about, not a failure of this run.
func (th *Thresholds) assertRelist(res *relistResult) {
	const section = "the relist at S5"
	srv := res.server
	kills, restarts := res.totals()
	if res.notReady == "" {
		th.Report.Assert(section, srv.name+": every informer of every replica listed again after the outage", res.relisted > 0,
			"%s", res.relistSummary())
	}
	if srv.ours() {
		detail := fmt.Sprintf("%d OOM kills, %d restarts, peak %s", kills, restarts, res.peaks())
		if res.notReady != "" {
			detail += " (" + res.notReady + ")"
		}
		th.Report.Assert(section, fmt.Sprintf("%s: served S5, not OOM-killed, not restarted (limit %s)", srv.name, res.limit),
			res.notReady == "" && kills == 0 && restarts == 0, "%s", detail)
	}
}

// totals are the OOM kills and restarts of all the server's pods.
func (r *relistResult) totals() (kills, restarts int) {
	for _, p := range r.pods {
		kills += p.oomKills
		restarts += p.restarts
	}
	return kills, restarts
}
