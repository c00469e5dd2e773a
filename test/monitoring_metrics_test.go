package test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// TestMonitoringMetricsExported runs the binary on deploy/base's Corefile,
// with multicluster added (the multicluster overlay's plugin, whose metrics
// the rules and the dashboard read too), against an API server of the
// test's own, makes it do what each metric counts, scrapes its /metrics
// and checks that every metric the rules and the dashboard read is there
// with at least one sample.
//
// How each name comes to be exported (a vector shows only once a label set
// has a value, so the test makes every one happen rather than trusting the
// code's declarations):
//   - coredns_build_info, coredns_plugin_enabled, process_* and go_*: from
//     start-up;
//   - coredns_watchcache_synced, _api_reachable, _permission_denied (0 for
//     each verb once a resource is listed) and coredns_<plugin>_synced
//     (unlabelled gauges): once synced;
//   - coredns_dns_requests_total, _responses_total,
//     _request_duration_seconds, coredns_cache_requests_total and
//     _hits_total, coredns_kubeschema_requests_total and
//     coredns_multicluster_requests_total: from the queries sent (a
//     cluster name, a clusterset name, an external name twice so the
//     second is a cache hit);
//   - coredns_dns_programming_duration_seconds and
//     coredns_watchcache_events_total: from a Service created after sync;
//     coredns_watchcache_updates_skipped_total from an annotation added to
//     it;
//   - coredns_watchcache_errors_total and _relists_total: from an outage
//     with a forced relist, as in docs/reliability.md: the API server is
//     stopped until a call has failed, etcd compacted past what the
//     watches saw, and the API server started again, so every watch ends
//     in 410 Gone and lists anew.
//
// Histograms are found by their family name (the _bucket, _sum and _count
// series a query reads are that family's).
func TestMonitoringMetricsExported(t *testing.T) {
	want := monitoringMetrics(t)
	// Only the node-local cache serves stale: stale_test.go checks it counts there.
	delete(want, "coredns_cache_served_stale_total")
	if len(want) == 0 {
		t.Fatal("no metric names found in the rules and the dashboard")
	}
	e := ownCluster(t, kubeapi.Options{})
	bin := coreDNSBinary(t)
	upstream := startStubUpstream(t)
	// The cluster DNS of the base with the multicluster component, as an
	// operator would apply them (its Corefile and the files it imports).
	files := clusterDNSOf(t, combo{"multicluster"}).config
	p := startClusterDNS(t, bin, files, e.kubeconfig, upstream.addr)
	p.waitReady(t, true)

	for _, q := range []struct {
		name  string
		rcode int
	}{
		{"kubernetes.default.svc.cluster.local.", dns.RcodeSuccess},
		{"nothing.default.svc.clusterset.local.", dns.RcodeNameError},
		{apExternal + ".", dns.RcodeSuccess},
		{apExternal + ".", dns.RcodeSuccess}, // from the cache
	} {
		r := query(t, p.dnsAddr, q.name, dns.TypeA)
		if r.Rcode != q.rcode {
			t.Errorf("%s: rcode %s, want %s", q.name, dns.RcodeToString[r.Rcode], dns.RcodeToString[q.rcode])
		}
	}

	ns := e.namespace("monitoring")
	e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	name := svcName("web", ns, clusterZone)
	eventually(t, changeTimeout, name+" answers", func() bool {
		return len(query(t, p.dnsAddr, name, dns.TypeA).Answer) == 1
	})
	e.updateService(ns, "web", func(s *corev1.Service) {
		s.Annotations = map[string]string{"example.com/note": "1"}
	})

	if err := e.cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	// Down until a call has failed: a restart quicker than the watches'
	// retry would leave nothing in errors_total.
	eventually(t, 60*time.Second, "a list or watch call fails", func() bool {
		_, ok := scrapeFamilies(t, p.metricsURL)["coredns_watchcache_errors_total"]
		return ok
	})
	if _, err := e.cluster.CompactEtcd(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.cluster.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The watches notice the outage, fail, and relist after their backoff.
	var missing []string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		missing = missingMetrics(want, scrapeFamilies(t, p.metricsURL))
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Fatalf("not exported after 90 s:\n%s", strings.Join(missing, "\n"))
	}
	names := make([]string, 0, len(want))
	for m := range want {
		names = append(names, m)
	}
	slices.Sort(names)
	t.Logf("exported, each with a sample: %s", strings.Join(names, " "))
}

// missingMetrics are the names of want that families lacks, each with
// where it is read.
func missingMetrics(want map[string][]string, families map[string]string) []string {
	var out []string
	for m, where := range want {
		if !exported(m, families) {
			out = append(out, fmt.Sprintf("%s (read by %s)", m, strings.Join(where, ", ")))
		}
	}
	slices.Sort(out)
	return out
}

// exported: families has name, or name is a series of a histogram (or
// summary) family that it has.
func exported(name string, families map[string]string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if fam, ok := strings.CutSuffix(name, suffix); ok {
			if typ := families[fam]; typ == "histogram" || (typ == "summary" && suffix != "_bucket") {
				return true
			}
		}
	}
	return false
}

// scrapeFamilies reads the metric families of a /metrics page by their
// TYPE lines: the Prometheus client writes one for each family that has at
// least one sample, and none for a vector with none.
func scrapeFamilies(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s %v", url, resp.Status, err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// query sends one query over UDP, retrying until an answer comes.
func query(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	var r *dns.Msg
	eventually(t, 30*time.Second, "an answer to "+name, func() bool {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		var err error
		r, _, err = (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
		return err == nil && r.Response
	})
	return r
}
