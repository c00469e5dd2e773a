// Package thresholds is the e2e run's thresholds scenario. A thresholds
// run (make e2e SCALE=thresholds) loads S5, the Kubernetes
// scalability thresholds (package clustershape), into the one-node
// cluster once, then measures each DNS server in turn through a relist of
// every informer it runs: its memory against its limit, its OOM kills and
// restarts, and what a client resolving through the kube-dns VIP saw.
//
// thresholds.go loads S5 and names the servers; measure.go measures one
// server; section.go writes the run's section of the report (on its own
// page and, spliced, on docs/e2e.md) and its figures as JSON.
package thresholds

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/internal/clustershape"
	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/report"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// serviceCIDRv6 makes a thresholds cluster's Services dual-stack, so that
// S5's dual-stack services get both families.
const serviceCIDRv6 = "fd00:198:19::/112"

// Deadline bounds a thresholds run at full scale: the cluster
// and images (1 min), S5's load (about 20 min on 2 cores), four servers
// of up to 20 min each (a rollout, 30 s steady, an API server restart
// with S5 loaded, the relists, a minute settling), with room.
const Deadline = 150 * time.Minute

// ClusterConfig is the cluster of a thresholds run: dual-stack Services, the
// DNS servers' lists audited (cluster.DNSAuditPolicy), time for the API
// server to come back with S5 loaded, and a node that stays Ready through
// the outage: after its grace period without the kubelet's lease, which
// cannot be renewed while the API server is down, the node lifecycle
// controller would mark the node and its pods not ready, and the DNS pods
// would leave the kube-dns endpoints for a reason of the harness's making.
var ClusterConfig = cluster.Config{
	ServiceCIDRs:    cluster.ServiceCIDR + "," + serviceCIDRv6,
	AuditPolicy:     cluster.DNSAuditPolicy,
	APIReady:        20 * time.Minute,
	ControllerFlags: []string{"--node-monitor-grace-period=30m"},
}

// dataOnly is S5's services' service-proxy-name: kube-proxy programs none
// of them (their addresses route nowhere), the DNS servers serve them all.
const dataOnly = "clustershape-data-only"

// clientNS holds the thresholds run's client.
const clientNS = "e2e"

// Thresholds is the run on a cluster; it owns what the run found.
type Thresholds struct {
	*scenario.Env
	// scale multiplies S5's services and pods (-thresholds-scale).
	scale float64
	// thr is what the run found, once S5 is loaded.
	thr *thresholdsRun
}

// New is the run on env's cluster, at scale × S5.
func New(env *scenario.Env, scale float64) *Thresholds { return &Thresholds{Env: env, scale: scale} }

// thresholdsRun is what a thresholds run found, for its report.
type thresholdsRun struct {
	layout *clustershape.Layout
	load   clustershape.LoadStats
	// apiRSS and etcdRSS are the two processes' RSS once S5 was loaded.
	apiRSS, etcdRSS int64
	// probe is the last ClusterIP service, which a server answers once
	// synced, and its address; podName and podIP the last pod's.
	probe, probeIP, podName, podIP string
	// names are what the client resolves.
	names   []string
	results []*relistResult
}

// Scale is the -scale of a thresholds run.
const Scale = "thresholds"

// Page heads a thresholds run's page.
func Page() report.Page {
	return report.Page{
		Title:   "The relist at the Kubernetes scalability thresholds: what `make e2e SCALE=thresholds` measured",
		Command: "make e2e SCALE=thresholds",
		Scale:   Scale,
		Intro:   cluster.Description + thresholdsClusterNote,
	}
}

// thresholdsClusterNote says how a thresholds run's cluster differs.
const thresholdsClusterNote = `
For this run the Services are dual-stack (` + cluster.ServiceCIDR + ` and ` + serviceCIDRv6 + `),
the API server audits the DNS servers' lists and watches (and nothing else),
and kube-controller-manager's node grace period is 30 minutes, so that the
node, whose kubelet cannot renew its lease while the API server is down,
is not marked unreachable with its pods during the forced relists.
`

// Steps are a thresholds run: S5 loaded, then each server.
func (th *Thresholds) Steps() []scenario.Step {
	steps := []scenario.Step{{Name: "S5 loaded", Run: th.loadThresholds}}
	for _, srv := range relistServers() {
		steps = append(steps, scenario.Step{Name: "relist: " + srv.name, Run: func(ctx context.Context) error { return th.measureRelist(ctx, srv) }})
	}
	return steps
}

// loadThresholds loads S5 (scaled by -thresholds-scale) and finds the
// names the measurements ask for.
func (th *Thresholds) loadThresholds(ctx context.Context) error {
	shape := clustershape.S5().Scaled(th.scale)
	shape.ProxyName = dataOnly
	l, err := shape.Layout()
	if err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	th.thr = &thresholdsRun{layout: l}
	th.Report.SetSection(th.section)
	th.Report.SetData(func() any { return th.thr.data(th.scale) })
	th.Logf("S5: %s", l.Describe())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clientNS}}
	if _, err := th.Cluster.Client().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	th.thr.load, err = clustershape.Load(ctx, th.Cluster.RESTConfig(), l, clustershape.LoadOptions{
		Progress: func(p clustershape.Progress) { th.Logf("S5: %s", p) },
	})
	if err != nil {
		return fmt.Errorf("%w: load S5: %w", scenario.ErrFatal, err)
	}
	th.thr.apiRSS, _ = cluster.ControlPlaneRSS("kube-apiserver")
	th.thr.etcdRSS, _ = cluster.ControlPlaneRSS("etcd")
	if err := th.findProbes(ctx); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	th.Report.Figure("S5 loaded", fmt.Sprintf("%s objects in %.0f s (%.0f writes/s with their pods' status, %d retries)",
		commas(th.thr.load.Total), th.thr.load.Elapsed.Seconds(), float64(th.thr.load.Writes)/th.thr.load.Elapsed.Seconds(), th.thr.load.Retries))
	th.Report.Figure("RSS once S5 was loaded", fmt.Sprintf("kube-apiserver %s, etcd %s", gib(th.thr.apiRSS), gib(th.thr.etcdRSS)))
	return nil
}

// findProbes picks the names a synced server answers and the client
// resolves: the last ClusterIP service and the last pod (whose name a
// server with `pods verified` answers only once it has listed the pods),
// a headless service, the first ClusterIP one, the API's own.
func (th *Thresholds) findProbes(ctx context.Context) error {
	l := th.thr.layout
	var first, last, headless int = -1, -1, -1
	for i := range l.Counts().Services {
		svc := l.Service(i)
		switch {
		case svc.Spec.Type != corev1.ServiceTypeClusterIP:
		case svc.Spec.ClusterIP == corev1.ClusterIPNone:
			if headless < 0 && len(l.Slices(i)) == 1 && i > l.Counts().Services/2 {
				headless = i
			}
		default:
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || headless < 0 {
		return fmt.Errorf("S5 has no ClusterIP or headless service to resolve")
	}
	fqdn := func(i int) string {
		svc := l.Service(i)
		return fmt.Sprintf("%s.%s.svc.cluster.local.", svc.Name, svc.Namespace)
	}
	lastSvc := l.Service(last)
	got, err := th.Cluster.Client().CoreV1().Services(lastSvc.Namespace).Get(ctx, lastSvc.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pod := l.Pod(l.Counts().Pods - 1)
	th.thr.probe, th.thr.probeIP = fqdn(last), got.Spec.ClusterIP
	th.thr.podIP = pod.Status.PodIP
	th.thr.podName = fmt.Sprintf("%s.%s.pod.cluster.local.", strings.ReplaceAll(pod.Status.PodIP, ".", "-"), pod.Namespace)
	th.thr.names = []string{fqdn(first), fqdn(headless), fqdn(last), "kubernetes.default.svc.cluster.local."}
	return nil
}

// relistServer is one DNS server a thresholds run measures.
type relistServer struct {
	name string // in the report
	// tree is ours's deploy/ tree, applied through a kustomization;
	// "" for stock, kubeadm's manifests.
	tree string
	// limit is the memory limit patched in; "" keeps the manifest's.
	limit string
	// informers are the resources it watches: each must relist.
	informers []string
}

func (s relistServer) ours() bool { return s.tree != "" }

// relistServers are the servers a thresholds run measures, in order.
func relistServers() []relistServer {
	kubeadm := stockLimit()
	ours := []string{"services", "endpointslices", "servicecidrs"}
	return []relistServer{
		{name: "ours (deploy/base)", tree: "base", informers: ours},
		{name: "ours (deploy/base) at kubeadm's limit", tree: "base", limit: kubeadm, informers: ours},
		{name: "ours with pods verified (deploy/overlays/pods-verified) at kubeadm's limit", tree: "overlays/pods-verified", limit: kubeadm,
			informers: append(append([]string(nil), ours...), "pods")},
		// kubeadm's Corefile has `pods insecure`: no pod watch; the
		// kubernetes plugin always watches namespaces.
		{name: "stock CoreDNS 1.15 (kubeadm's addon)", informers: []string{"services", "endpointslices", "namespaces"}},
	}
}

// stockLimit is the memory limit of kubeadm's CoreDNS Deployment.
func stockLimit() string {
	m := regexp.MustCompile(`limits:\s*\n\s*memory:\s*(\S+)`).FindSubmatch(manifests.StockCoreDNS)
	if m == nil {
		return "170Mi"
	}
	return string(m[1])
}

// gib writes a size in GiB.
func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// commas writes n with its thousands separated: 150,000.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
