package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/kubeapi"
)

var (
	//go:embed manifests/imports.yaml
	importsManifest []byte
	//go:embed manifests/autopath.yaml
	autopathManifest []byte
)

const nodeLocalIP = "169.254.20.10"

// checkNodeLocal applies the node-local overlay, points kubelet's
// clusterDNS at it, and counts at the servers the queries a lookup costs a
// pod with the KEP-2009 search path.
func (e *e2e) checkNodeLocal(ctx context.Context) error {
	const section = "5. node-local autopath"
	// The load clients are done: their queries would blur the counts.
	e.stopLoad(ctx, loadClients)
	err := e.applyNodeLocal(ctx)
	if !e.rep.assert(section, "the node-local DaemonSet is ready on "+nodeLocalIP, err == nil, "%s", errText(err)) {
		return err
	}
	if err := e.n.restartKubelet(ctx, nodeLocalIP); err != nil {
		return err
	}
	if err := e.n.applyManifest(ctx, autopathManifest, e.placeholders()); err != nil {
		return err
	}
	if err := e.n.waitPodsReady(ctx, appNS, "autopath", "classic-nodelocal"); err != nil {
		return err
	}
	web, err := e.n.client().CoreV1().Services(appNS).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	var rows [][]string
	for _, nm := range []struct{ name, want string }{{"web", web.Spec.ClusterIP}, {"web.e2e", web.Spec.ClusterIP}, {"www.external.test", externalAddr}} {
		nodeBefore, err1 := e.nodeLocalRequests(ctx)
		clusterBefore, err2 := e.clusterRequests(ctx)
		out, err := e.n.exec(ctx, appNS, "autopath", "resolve", "lookup", nm.name)
		nodeAfter, err3 := e.nodeLocalRequests(ctx)
		clusterAfter, err4 := e.clusterRequests(ctx)
		if err := firstErr(err1, err2, err3, err4); err != nil {
			return err
		}
		got := strings.TrimSpace(out)
		e.rep.assert(section, "autopath pod resolves "+nm.name, err == nil && got == nm.name+" "+nm.want, "%s %s", got, errText(err))
		atNode, atCluster := nodeAfter-nodeBefore, clusterAfter-clusterBefore
		e.rep.assert(section, "≤ 2 queries reach the node-local cache for "+nm.name, atNode <= 2 && atNode > 0,
			"%.0f at node-local, %.0f at the cluster DNS", atNode, atCluster)
		rows = append(rows, []string{nm.name, fmt.Sprintf("%.0f", atNode), fmt.Sprintf("%.0f", atCluster)})
	}
	e.rep.table("Queries one getaddrinfo (A and AAAA) costs a pod with the KEP-2009 search path, counted by the servers' coredns_dns_requests_total",
		[]string{"name", "at the node-local cache", "at the cluster DNS"}, rows)
	conf, err := e.n.exec(ctx, appNS, "classic-nodelocal", "getent", "ahostsv4", "web")
	e.rep.assert(section, "a ClusterFirst pod made after kubelet's clusterDNS moved to "+nodeLocalIP+" resolves web through it",
		err == nil && firstField(conf) == web.Spec.ClusterIP, "%s %s", firstField(conf), errText(err))
	return nil
}

// applyNodeLocal applies the node-local overlay, its Corefile pointed at
// this cluster's kube-dns, and waits until its DaemonSet is ready.
func (e *e2e) applyNodeLocal(ctx context.Context) error {
	root, err := kubeapi.RepoRoot()
	if err != nil {
		return err
	}
	corefile, err := os.ReadFile(filepath.Join(root, "deploy", "components", "node-local", "Corefile"))
	if err != nil {
		return err
	}
	// The one change an operator whose kube-dns is elsewhere makes.
	corefile = []byte(strings.ReplaceAll(string(corefile), "10.96.0.10", dnsVIP))
	dir, err := overlay("node-local", "overlays/node-local", e.ourTag, `configMapGenerator:
  - name: node-local-dns
    namespace: kube-system
    behavior: replace
    files:
      - Corefile
`)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Corefile"), corefile, 0o644); err != nil {
		return err
	}
	if _, err := e.n.kubectlRun(ctx, nil, "apply", "-k", dir); err != nil {
		return err
	}
	return e.waitDaemonSetReady(ctx, oursNodeLocal)
}

// waitDaemonSetReady waits until every pod a DaemonSet schedules is
// ready.
func (e *e2e) waitDaemonSetReady(ctx context.Context, name string) error {
	return waitFor(ctx, 3*time.Minute, "DaemonSet "+name+" ready", func() error {
		ds, err := e.n.client().AppsV1().DaemonSets(dnsNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
			return fmt.Errorf("%d of %d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
		}
		return nil
	})
}

// nodeLocalRequests sums the node-local cache's DNS requests.
func (e *e2e) nodeLocalRequests(ctx context.Context) (float64, error) {
	return scrapeSum(ctx, "http://"+nodeLocalIP+":9253/metrics", "coredns_dns_requests_total")
}

// clusterRequests sums the DNS requests of every cluster DNS pod.
func (e *e2e) clusterRequests(ctx context.Context) (float64, error) {
	pods, err := e.dnsPods(ctx)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, p := range pods {
		v, err := scrapeSum(ctx, "http://"+p.Status.PodIP+":9153/metrics", "coredns_dns_requests_total")
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// scrapeSum fetches a Prometheus text page and sums the samples of metric.
func scrapeSum(ctx context.Context, url, metric string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			total += v
		}
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

// checkMulticluster applies the multicluster overlay and resolves imported
// services from a pod.
func (e *e2e) checkMulticluster(ctx context.Context) error {
	const section = "6. multicluster"
	web, err := e.n.client().CoreV1().Services(appNS).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	dir, err := overlay("multicluster", "overlays/multicluster", e.ourTag, "")
	if err != nil {
		return err
	}
	if _, err := e.n.kubectlRun(ctx, nil, "apply", "-k", dir); err != nil {
		return err
	}
	if err := e.n.waitRollout(ctx, dnsNS, dnsDeploy, 4*time.Minute); err != nil {
		return err
	}
	if err := e.n.applyManifest(ctx, importsManifest, nil); err != nil {
		return err
	}
	checks := []struct {
		what, pod string
		cmd       []string
		want      string
	}{
		{"glibc: ClusterSetIP import", "glibc", []string{"getent", "ahostsv4", "shop.e2e.svc.clusterset.local"}, "198.19.250.1"},
		{"musl: ClusterSetIP import", "musl", []string{"resolve", "lookup", "-4", "shop.e2e.svc.clusterset.local"}, "shop.e2e.svc.clusterset.local 198.19.250.1"},
		{"glibc: headless import", "glibc", []string{"getent", "ahostsv4", "ledger.e2e.svc.clusterset.local"}, "198.18.200.7"},
		{"glibc: a headless import's host in its cluster", "glibc", []string{"getent", "ahostsv4", "ledger-0.cluster-b.ledger.e2e.svc.clusterset.local"}, "198.18.200.7"},
		{"dig: SRV of a headless import", "glibc", []string{"dig", "+short", "SRV", "_sql._tcp.ledger.e2e.svc.clusterset.local"}, "0 100 5432 ledger-0.cluster-b.ledger.e2e.svc.clusterset.local."},
		{"cluster.local still served", "glibc", []string{"getent", "ahostsv4", "web"}, web.Spec.ClusterIP},
	}
	for _, c := range checks {
		var got string
		// The imports reach the servers through their watch: wait for them.
		err := waitFor(ctx, 30*time.Second, c.what, func() error {
			out, err := e.n.exec(ctx, appNS, c.pod, c.cmd...)
			got = strings.TrimSpace(out)
			if c.cmd[0] == "getent" {
				got = firstField(out)
			}
			if err != nil || got != c.want {
				return fmt.Errorf("%q %v", got, err)
			}
			return nil
		})
		e.rep.assert(section, c.what, err == nil, "%s %s", got, errText(err))
	}
	return nil
}
