// Package autopath is the e2e run's node-local autopath check (section 5
// of docs/e2e.md): deploy/overlays/node-local applied, kubelet's
// clusterDNS pointed at it, and the queries a lookup costs a pod with the
// KEP-2009 search path counted at the servers.
package autopath

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// Autopath is the check on a cluster.
type Autopath struct {
	*scenario.Env
}

// New is the check on env's cluster.
func New(env *scenario.Env) *Autopath { return &Autopath{env} }

// Run applies the node-local overlay, points kubelet's
// clusterDNS at it, and counts at the servers the queries a lookup costs a
// pod with the KEP-2009 search path.
func (a *Autopath) Run(ctx context.Context) error {
	const section = "5. node-local autopath"
	// The load clients are done: their queries would blur the counts.
	a.StopLoad(ctx, scenario.LoadClients)
	err := a.ApplyNodeLocal(ctx)
	if !a.Report.Assert(section, "the node-local DaemonSet is ready on "+scenario.NodeLocalIP, err == nil, "%s", scenario.ErrText(err)) {
		return err
	}
	if err := a.Cluster.RestartKubelet(ctx, scenario.NodeLocalIP); err != nil {
		return err
	}
	if err := a.Cluster.ApplyManifest(ctx, manifests.Autopath, a.Placeholders()); err != nil {
		return err
	}
	if err := a.Cluster.WaitPodsReady(ctx, scenario.AppNS, "autopath", "classic-nodelocal"); err != nil {
		return err
	}
	web, err := a.Cluster.Client().CoreV1().Services(scenario.AppNS).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	var rows [][]string
	for _, nm := range []struct{ name, want string }{{"web", web.Spec.ClusterIP}, {"web.e2e", web.Spec.ClusterIP}, {"www.external.test", cluster.ExternalAddr}} {
		nodeBefore, err1 := a.nodeLocalRequests(ctx)
		clusterBefore, err2 := a.clusterRequests(ctx)
		out, err := a.Cluster.Exec(ctx, scenario.AppNS, "autopath", "resolve", "lookup", nm.name)
		nodeAfter, err3 := a.nodeLocalRequests(ctx)
		clusterAfter, err4 := a.clusterRequests(ctx)
		if err := firstErr(err1, err2, err3, err4); err != nil {
			return err
		}
		got := strings.TrimSpace(out)
		a.Report.Assert(section, "autopath pod resolves "+nm.name, err == nil && got == nm.name+" "+nm.want, "%s %s", got, scenario.ErrText(err))
		atNode, atCluster := nodeAfter-nodeBefore, clusterAfter-clusterBefore
		a.Report.Assert(section, "≤ 2 queries reach the node-local cache for "+nm.name, atNode <= 2 && atNode > 0,
			"%.0f at node-local, %.0f at the cluster DNS", atNode, atCluster)
		rows = append(rows, []string{nm.name, fmt.Sprintf("%.0f", atNode), fmt.Sprintf("%.0f", atCluster)})
	}
	a.Report.Table("Queries one getaddrinfo (A and AAAA) costs a pod with the KEP-2009 search path, counted by the servers' coredns_dns_requests_total",
		[]string{"name", "at the node-local cache", "at the cluster DNS"}, rows)
	conf, err := a.Cluster.Exec(ctx, scenario.AppNS, "classic-nodelocal", "getent", "ahostsv4", "web")
	a.Report.Assert(section, "a ClusterFirst pod made after kubelet's clusterDNS moved to "+scenario.NodeLocalIP+" resolves web through it",
		err == nil && scenario.FirstField(conf) == web.Spec.ClusterIP, "%s %s", scenario.FirstField(conf), scenario.ErrText(err))
	return nil
}

// nodeLocalRequests sums the node-local cache's DNS requests.
func (a *Autopath) nodeLocalRequests(ctx context.Context) (float64, error) {
	return scenario.ScrapeSum(ctx, "http://"+scenario.NodeLocalIP+":9253/metrics", "coredns_dns_requests_total")
}

// clusterRequests sums the DNS requests of every cluster DNS pod.
func (a *Autopath) clusterRequests(ctx context.Context) (float64, error) {
	pods, err := a.DNSPods(ctx)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, p := range pods {
		v, err := scenario.ScrapeSum(ctx, "http://"+p.Status.PodIP+":9153/metrics", "coredns_dns_requests_total")
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
