package multicluster

import (
	"bytes"
	"context"
	golog "log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	corev1 "k8s.io/api/core/v1"
)

// built is a plugin with its builder, for driving changes by hand.
type built struct {
	t   *testing.T
	m   *Multicluster
	b   *builder
	src *memSource
}

func newBuilt(t *testing.T) *built {
	m := newMulticluster()
	m.Zones = []string{"clusterset.local.", "in-addr.arpa."}
	src := fixture(t)
	b := newBuilder(m, src)
	b.Publish()
	return &built{t: t, m: m, b: b, src: src}
}

// event delivers events as the cache would after a change, and applies.
func (x *built) event(evs ...kubesource.Event) {
	for _, ev := range evs {
		if ev.Changed.IsZero() {
			ev.Changed = time.Now()
		}
		x.b.Mark(ev)
	}
	x.b.Apply()
}

// expect checks the first answer record of name/qtype ("" for none) and
// the rcode.
func (x *built) expect(name string, qtype uint16, rcode int, first string) {
	x.t.Helper()
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := x.m.ServeDNS(context.Background(), w, test.Case{Qname: name, Qtype: qtype}.Msg()); err != nil {
		x.t.Fatal(err)
	}
	got := ""
	if len(w.Msg.Answer) > 0 {
		got = w.Msg.Answer[0].String()
	}
	if w.Msg.Rcode != rcode || !strings.HasSuffix(got, first) || (first == "" && got != "") {
		x.t.Errorf("%s %s: rcode %s, first answer %q; want %s and %q", name, dns.TypeToString[qtype],
			dns.RcodeToString[w.Msg.Rcode], got, dns.RcodeToString[rcode], first)
	}
}

func svcEvent(ns, name string) kubesource.Event {
	return kubesource.Event{Resource: kubesource.Services, Namespace: ns, Service: name}
}

func importEvent(ns, name string) kubesource.Event {
	return kubesource.Event{Resource: kubesource.ServiceImports, Namespace: ns, Service: name, Import: name}
}

func sliceEvent(ns, svc, imp string) kubesource.Event {
	return kubesource.Event{Resource: kubesource.EndpointSlices, Namespace: ns, Service: svc, Import: imp}
}

// TestMulticlusterLocalNamesWin follows the PTR record of imported addresses as this
// cluster's own Services and EndpointSlices come and go.
func TestMulticlusterLocalNamesWin(t *testing.T) {
	x := newBuilt(t)
	const webPTR, dummyPTR, db0bPTR = "10.0.42.10.in-addr.arpa.", "20.0.42.10.in-addr.arpa.", "1.0.2.10.in-addr.arpa."
	x.expect(webPTR, dns.TypePTR, dns.RcodeSuccess, "web.ns1.svc.clusterset.local.")
	x.expect(dummyPTR, dns.TypePTR, dns.RcodeNameError, "")

	before := x.m.Snapshot()
	x.src.Add(t, localService("ns3", "unrelated", "10.96.0.7"))
	x.event(svcEvent("ns3", "unrelated"))
	if x.m.Snapshot() != before {
		t.Error("a local service unrelated to any import published a new snapshot")
	}

	x.src.Remove("ns1/gke-mcs-dummied")
	x.event(svcEvent("ns1", "gke-mcs-dummied"))
	x.expect(dummyPTR, dns.TypePTR, dns.RcodeSuccess, "dummied.ns1.svc.clusterset.local.")

	x.src.Add(t, localService("ns3", "takeover", "10.42.0.10"))
	x.event(svcEvent("ns3", "takeover"))
	x.expect(webPTR, dns.TypePTR, dns.RcodeNameError, "")
	x.src.Add(t, localService("ns3", "takeover", "10.96.0.8")) // gives the address up
	x.event(svcEvent("ns3", "takeover"))
	x.expect(webPTR, dns.TypePTR, dns.RcodeSuccess, "web.ns1.svc.clusterset.local.")

	x.expect(db0bPTR, dns.TypePTR, dns.RcodeNameError, "")
	x.src.Remove("ns2/local-db-1")
	x.event(sliceEvent("ns2", "local-db", ""))
	x.expect(db0bPTR, dns.TypePTR, dns.RcodeSuccess, "db-0.cluster-b.db.ns1.svc.clusterset.local.")
	x.src.Add(t, localSlice("ns2", "local-db-2", "local-db", ep{addr: "10.2.0.1"}))
	x.event(sliceEvent("ns2", "local-db", ""))
	x.expect(db0bPTR, dns.TypePTR, dns.RcodeNameError, "")
}

// TestMulticlusterImportChanges rebuilds imports on their events: new IPs, a slice
// becoming ready, a deleted import; and the programming latency of each
// kind is observed.
func TestMulticlusterImportChanges(t *testing.T) {
	x := newBuilt(t)
	setBefore, headlessBefore := sampleCount(kubesource.ClusterSetIP), sampleCount(kubesource.MulticlusterHeadless)
	serial := x.m.Snapshot().Serial()

	x.src.Add(t, clusterSetIP("ns1", "web", []string{"10.42.0.30"}, port("http", corev1.ProtocolTCP, 80)))
	x.event(importEvent("ns1", "web"))
	x.expect("web.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeSuccess, "10.42.0.30")
	x.expect("web.ns1.svc.clusterset.local.", dns.TypeAAAA, dns.RcodeSuccess, "")
	x.expect("10.0.42.10.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, "")
	x.expect("30.0.42.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, "web.ns1.svc.clusterset.local.")
	if got := x.m.Snapshot().Serial(); got <= serial {
		t.Errorf("serial %d after a change, was %d", got, serial)
	}

	x.src.Add(t, importedSlice("ns1", "asleep-a", "asleep", "cluster-a", 5432, ep{addr: "10.3.0.1", host: "awake"}))
	x.event(sliceEvent("ns1", "", "asleep"))
	x.expect("awake.cluster-a.asleep.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeSuccess, "10.3.0.1")

	x.src.Remove("ns1/db")
	x.event(importEvent("ns1", "db"))
	x.expect("db.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, "")
	x.expect("1.0.1.10.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, "")
	x.expect("ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeSuccess, "")

	if sampleCount(kubesource.ClusterSetIP) <= setBefore || sampleCount(kubesource.MulticlusterHeadless) < headlessBefore+2 {
		t.Errorf("programming latency not observed for both kinds")
	}
}

// sampleCount is how many changes of kind multicluster has served, as the
// programming histogram has them.
func sampleCount(kind kubesource.ServiceKind) uint64 {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "coredns_dns_programming_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["plugin"] == pluginName && labels["service_kind"] == string(kind) {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// TestMulticlusterBadInputLoggedOnce rebuilds an import with bad input several times:
// each problem is logged once while it lasts, and again if it comes back.
func TestMulticlusterBadInputLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	golog.SetOutput(&buf)
	t.Cleanup(func() { golog.SetOutput(os.Stderr) })
	x := newBuilt(t)
	count := func(s string) int { return strings.Count(buf.String(), s) }
	const noCluster, badCluster, dup = "db-nocluster has no", `cluster ID "cluster.c" is not a DNS label`, `clusters "cluster-a" and "cluster-b" claim the same addresses (10.1.0.1 first)`
	for _, s := range []string{noCluster, badCluster, dup, "port 8080/tcp has no name", "type ClusterSetIP without IPs"} {
		if count(s) != 1 {
			t.Errorf("%q logged %d times after the first build, want once:\n%s", s, count(s), buf.String())
		}
	}
	x.event(importEvent("ns1", "db"), sliceEvent("ns1", "", "db"))
	x.event(sliceEvent("ns1", "", "db"))
	if count(noCluster) != 1 || count(dup) != 1 {
		t.Errorf("problems logged again on rebuilds:\n%s", buf.String())
	}
	x.src.Remove("ns1/db-nocluster")
	x.event(sliceEvent("ns1", "", "db"))
	x.src.Add(t, importedSlice("ns1", "db-nocluster", "db", "", 5432, ep{addr: "10.9.0.1"}))
	x.event(sliceEvent("ns1", "", "db"))
	if count(noCluster) != 2 || count(badCluster) != 1 {
		t.Errorf("a problem that came back: logged %d times, want 2:\n%s", count(noCluster), buf.String())
	}
}
