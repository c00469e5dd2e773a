package test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

// Whole-server tests of what multicluster shares with kubeschema: one
// cache and one watch per resource; and its programming latency metric.

// TestMulticlusterSharedWatches checks that kubeschema and multicluster
// configured with the same connection, in one server block or in two,
// hold one cache: one Handle each, and one watch per resource shared by
// both (services and endpointslices) or multicluster's own
// (serviceimports). The API server agrees: it serves exactly one more
// watch of each of those resources than before the server started. Both
// plugins answer from the cache.
func TestMulticlusterSharedWatches(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("shared")
	e.createImport(ns, mcClusterSetIP("web", []string{"10.247.7.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	web := e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))

	twoBlocks := `cluster.local:0 {
    bind 127.0.0.1
    kubeschema {
        kubeconfig %[1]s
        startup_timeout 60s
    }
}
clusterset.local:0 {
    bind 127.0.0.1
    multicluster {
        kubeconfig %[1]s
        startup_timeout 60s
    }
}
`
	for _, tc := range []struct{ name, corefile string }{{"one block", mcCorefile}, {"two blocks", twoBlocks}} {
		t.Run(tc.name, func(t *testing.T) {
			informersBefore := informerCounts(t)
			t.Cleanup(func() {
				// Registered first, so it runs after the server's own
				// cleanup stopped it: no informer is left running.
				if got := informerCounts(t); !maps.Equal(got, informersBefore) {
					t.Errorf("coredns_watchcache_informers %v after the server stopped, want %v", got, informersBefore)
				}
			})
			before := e.settledAPIWatches()
			s := startServer(t, fmt.Sprintf(tc.corefile, e.kubeconfig))
			// One informer per resource for both plugins.
			if got, want := informerCounts(t), addCounts(informersBefore, map[string]float64{"services": 1, "endpointslices": 1, "serviceimports": 1}); !maps.Equal(got, want) {
				t.Fatalf("coredns_watchcache_informers %v, want %v", got, want)
			}
			e.expectAPIWatches(before, map[string]int{"services": 1, "endpointslices": 1, "serviceimports": 1})
			if tc.name == "one block" {
				expect(t, s, "udp", mcSvc("web", ns), dns.TypeA, answer(rrLine(mcSvc("web", ns), "A", "10.247.7.10")), settleTimeout)
				expect(t, s, "udp", svcName("web", ns, clusterZone), dns.TypeA, answer(rrLine(svcName("web", ns, clusterZone), "A", web.Spec.ClusterIP)), settleTimeout)
			}
			if got := gaugeValue(t, "coredns_multicluster_synced"); got != 1 {
				t.Errorf("coredns_multicluster_synced = %v while serving, want 1", got)
			}
		})
	}
}

// mcWatched are the resources whose watches the API server counts for
// TestMulticlusterSharedWatches.
var mcWatched = []string{"services", "endpointslices", "serviceimports"}

// apiWatches reads, from the API server's own metrics, how many watches of
// each of mcWatched it is serving (its own internal ones included).
func (e *mcEnv) apiWatches() map[string]int {
	e.t.Helper()
	out, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(e.ctx)
	if err != nil {
		e.t.Fatalf("API server metrics: %v", err)
	}
	counts := map[string]int{}
	for _, r := range mcWatched {
		counts[r] = 0
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		for _, r := range mcWatched {
			if strings.Contains(line, `resource="`+r+`"`) {
				var n float64
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &n)
				counts[r] += int(n)
			}
		}
	}
	return counts
}

// settledAPIWatches is apiWatches once two readings agree: watches that
// clients just closed may take a moment to end on the server.
func (e *mcEnv) settledAPIWatches() map[string]int {
	e.t.Helper()
	last := e.apiWatches()
	for range 50 {
		time.Sleep(200 * time.Millisecond)
		now := e.apiWatches()
		if maps.Equal(now, last) {
			return now
		}
		last = now
	}
	e.t.Fatalf("the API server's watch counts do not settle: %v", last)
	return nil
}

// expectAPIWatches waits until the API server serves exactly delta more
// watches than before, and checks that it stays so for a second.
func (e *mcEnv) expectAPIWatches(before, delta map[string]int) {
	e.t.Helper()
	want := map[string]int{}
	for _, r := range mcWatched {
		want[r] = before[r] + delta[r]
	}
	var got map[string]int
	var last string
	eventually(diffReport{e.t, &last}, 10*time.Second, fmt.Sprintf("API server watches %v (before the server: %v)", want, before),
		func() bool { got = e.apiWatches(); last = fmt.Sprint(got); return maps.Equal(got, want) })
	for range 5 {
		time.Sleep(200 * time.Millisecond)
		if got = e.apiWatches(); !maps.Equal(got, want) {
			e.t.Fatalf("API server watches %v, want %v (before the server: %v)", got, want, before)
		}
	}
}

// TestMulticlusterProgrammingLatency changes an import of each kind and
// checks that coredns_dns_programming_duration_seconds{plugin="multicluster"}
// counted both kinds.
func TestMulticlusterProgrammingLatency(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("latency")
	s := e.server(mcCorefile)
	before := programmingCounts(t, "multicluster")

	e.createImport(ns, mcClusterSetIP("vip", []string{"10.247.9.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	e.createImport(ns, mcHeadless("pods", mcPort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, mcSlice("pods-a", "pods", "cluster-a", nil, endpoint{addr: "10.246.9.10"}))
	expect(t, s, "udp", mcSvc("vip", ns), dns.TypeA, answer(rrLine(mcSvc("vip", ns), "A", "10.247.9.10")), settleTimeout)
	expect(t, s, "udp", mcSvc("pods", ns), dns.TypeA, answer(rrLine(mcSvc("pods", ns), "A", "10.246.9.10")), settleTimeout)

	after := programmingCounts(t, "multicluster")
	for _, kind := range []watchcache.ServiceKind{watchcache.ClusterSetIP, watchcache.MulticlusterHeadless} {
		if after[string(kind)] <= before[string(kind)] {
			t.Errorf("programming latency for %s: %d observations before, %d after", kind, before[string(kind)], after[string(kind)])
		}
	}
}
