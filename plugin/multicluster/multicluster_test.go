package multicluster

import (
	"context"
	"net/netip"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
)

func newTestPlugin(t testing.TB, src cacheReader) *Multicluster {
	t.Helper()
	m := newMulticluster()
	m.Zones = []string{"clusterset.local.", "in-addr.arpa.", "ip6.arpa."}
	m.NSAddrs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	m.Publish(newBuilder(m, src).fullBuild())
	return m
}

const (
	soa    = "clusterset.local. 5 IN SOA ns.dns.clusterset.local. hostmaster.clusterset.local. 1 7200 1800 86400 5"
	soaRev = "in-addr.arpa. 5 IN SOA ns.dns.clusterset.local. hostmaster.clusterset.local. 1 7200 1800 86400 5"
)

func negative() []dns.RR { return []dns.RR{test.SOA(soa)} }

func nx(name string, qtype uint16) test.Case {
	return test.Case{Qname: name, Qtype: qtype, Rcode: dns.RcodeNameError, Ns: negative()}
}

func nodata(name string, qtype uint16) test.Case {
	return test.Case{Qname: name, Qtype: qtype, Ns: negative()}
}

var (
	webA    = test.A("web.ns1.svc.clusterset.local. 5 IN A 10.42.0.10")
	webAAAA = test.AAAA("web.ns1.svc.clusterset.local. 5 IN AAAA fd00:42::10")
	db0A    = test.A("db-0.cluster-a.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1")
	db0AAAA = test.AAAA("db-0.cluster-a.db.ns1.svc.clusterset.local. 5 IN AAAA fd00::1")
	db0B    = test.A("db-0.cluster-b.db.ns1.svc.clusterset.local. 5 IN A 10.2.0.1")
	dashedA = test.A("10-1-0-2.cluster-a.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.2")
)

var cases = []test.Case{
	// Apex, version, nameserver.
	{Qname: "clusterset.local.", Qtype: dns.TypeSOA, Answer: []dns.RR{test.SOA(soa)}},
	{Qname: "clusterset.local.", Qtype: dns.TypeNS, Answer: []dns.RR{test.NS("clusterset.local. 5 IN NS ns.dns.clusterset.local.")},
		Extra: []dns.RR{test.A("ns.dns.clusterset.local. 5 IN A 127.0.0.1")}},
	nodata("clusterset.local.", dns.TypeA),
	{Qname: "dns-version.clusterset.local.", Qtype: dns.TypeTXT, Answer: []dns.RR{test.TXT(`dns-version.clusterset.local. 5 IN TXT "1.0.0"`)}},
	nodata("dns-version.clusterset.local.", dns.TypeA),
	{Qname: "ns.dns.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("ns.dns.clusterset.local. 5 IN A 127.0.0.1")}},
	nodata("dns.clusterset.local.", dns.TypeA),
	nodata("svc.clusterset.local.", dns.TypeA),
	nodata("ns1.svc.clusterset.local.", dns.TypeA),
	nx("ns2.svc.clusterset.local.", dns.TypeA),
	nx("nothing.clusterset.local.", dns.TypeA),
	nx("web.ns1.pod.clusterset.local.", dns.TypeA),
	// ClusterSetIP, dual-stack.
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{webA}},
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{webAAAA}},
	nodata("web.ns1.svc.clusterset.local.", dns.TypeMX),
	{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{
			test.SRV("_dns._udp.web.ns1.svc.clusterset.local. 5 IN SRV 0 100 53 web.ns1.svc.clusterset.local."),
			test.SRV("_http._tcp.web.ns1.svc.clusterset.local. 5 IN SRV 0 100 80 web.ns1.svc.clusterset.local."),
		},
		Extra: []dns.RR{webA, webAAAA}},
	{Qname: "_http._tcp.web.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{test.SRV("_http._tcp.web.ns1.svc.clusterset.local. 5 IN SRV 0 100 80 web.ns1.svc.clusterset.local.")},
		Extra:  []dns.RR{webA, webAAAA}},
	{Qname: "_dns._udp.web.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{test.SRV("_dns._udp.web.ns1.svc.clusterset.local. 5 IN SRV 0 100 53 web.ns1.svc.clusterset.local.")},
		Extra:  []dns.RR{webA, webAAAA}},
	nodata("_http._tcp.web.ns1.svc.clusterset.local.", dns.TypeA),
	nx("_dns._tcp.web.ns1.svc.clusterset.local.", dns.TypeSRV),
	nodata("_tcp.web.ns1.svc.clusterset.local.", dns.TypeSRV),
	nx("_sctp.web.ns1.svc.clusterset.local.", dns.TypeSRV),
	// The reserved <clusterid>.<svc> form, and names under it.
	nx("cluster-a.web.ns1.svc.clusterset.local.", dns.TypeA),
	nx("cluster-a.db.ns1.svc.clusterset.local.", dns.TypeA),
	nx("cluster-a.db.ns1.svc.clusterset.local.", dns.TypeSRV),
	nx("host.cluster-a.web.ns1.svc.clusterset.local.", dns.TypeA),
	nx("x.y.z.db.ns1.svc.clusterset.local.", dns.TypeA),
	nx("*.ns1.svc.clusterset.local.", dns.TypeA),
	// IPv6 only, a port without protocol (TCP).
	nodata("v6only.ns1.svc.clusterset.local.", dns.TypeA),
	{Qname: "_http._tcp.v6only.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{test.SRV("_http._tcp.v6only.ns1.svc.clusterset.local. 5 IN SRV 0 100 80 v6only.ns1.svc.clusterset.local.")},
		Extra:  []dns.RR{test.AAAA("v6only.ns1.svc.clusterset.local. 5 IN AAAA fd00:42::11")}},
	// An unnamed port: no SRV record; no IPs: not served.
	{Qname: "plain.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("plain.ns1.svc.clusterset.local. 5 IN A 10.42.0.12")}},
	nodata("plain.ns1.svc.clusterset.local.", dns.TypeSRV),
	nx("_tcp.plain.ns1.svc.clusterset.local.", dns.TypeSRV),
	nx("noips.ns1.svc.clusterset.local.", dns.TypeA),
	nx("_http._tcp.noips.ns1.svc.clusterset.local.", dns.TypeSRV),
	// Headless across clusters: ready endpoints merged, the duplicate
	// address once (from cluster-a), slices without a usable cluster ID out.
	{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{
		test.A("db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1"), test.A("db.ns1.svc.clusterset.local. 5 IN A 10.1.0.2"),
		test.A("db.ns1.svc.clusterset.local. 5 IN A 10.2.0.1")}},
	{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("db.ns1.svc.clusterset.local. 5 IN AAAA fd00::1")}},
	{Qname: "db-0.cluster-a.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{db0A}},
	{Qname: "db-0.cluster-a.db.ns1.svc.clusterset.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{db0AAAA}},
	{Qname: "db-0.cluster-b.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{db0B}},
	nodata("db-0.cluster-b.db.ns1.svc.clusterset.local.", dns.TypeAAAA),
	{Qname: "10-1-0-2.cluster-a.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{dashedA}},
	nx("10-1-0-2.cluster-b.db.ns1.svc.clusterset.local.", dns.TypeA),
	nx("10-1-0-1.cluster-b.db.ns1.svc.clusterset.local.", dns.TypeA),
	nx("10-1-0-3.cluster-a.db.ns1.svc.clusterset.local.", dns.TypeA),
	nx("10-1-0-4.cluster-a.db.ns1.svc.clusterset.local.", dns.TypeA),
	nx("10-9-0-1.cluster-a.db.ns1.svc.clusterset.local.", dns.TypeA),
	nx("db-0.cluster-c.db.ns1.svc.clusterset.local.", dns.TypeA),
	// SRV N×M; each target's port is its cluster's slice port.
	{Qname: "_pg._tcp.db.ns1.svc.clusterset.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{
			test.SRV("_pg._tcp.db.ns1.svc.clusterset.local. 5 IN SRV 0 33 15432 10-1-0-2.cluster-a.db.ns1.svc.clusterset.local."),
			test.SRV("_pg._tcp.db.ns1.svc.clusterset.local. 5 IN SRV 0 33 15432 db-0.cluster-a.db.ns1.svc.clusterset.local."),
			test.SRV("_pg._tcp.db.ns1.svc.clusterset.local. 5 IN SRV 0 33 5432 db-0.cluster-b.db.ns1.svc.clusterset.local."),
		},
		Extra: []dns.RR{dashedA, db0A, db0AAAA, db0B}},
	// No ready endpoint in any cluster: NXDOMAIN.
	nx("asleep.ns1.svc.clusterset.local.", dns.TypeA),
	nx("_pg._tcp.asleep.ns1.svc.clusterset.local.", dns.TypeSRV),
	// Case: compared without it, repeated as asked.
	{Qname: "WEB.Ns1.svc.ClusterSet.Local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("WEB.Ns1.svc.ClusterSet.Local. 5 IN A 10.42.0.10")}},
	{Qname: "DB-0.Cluster-A.db.ns1.svc.clusterset.local.", Qtype: dns.TypeA,
		Answer: []dns.RR{test.A("DB-0.Cluster-A.db.ns1.svc.clusterset.local. 5 IN A 10.1.0.1")}},
	// Reverse: clusterset IPs and named endpoints; none for what this
	// cluster names itself (a local service's IP, a local slice's endpoint).
	{Qname: "10.0.42.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("10.0.42.10.in-addr.arpa. 5 IN PTR web.ns1.svc.clusterset.local.")}},
	{Qname: "0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.2.4.0.0.0.0.d.f.ip6.arpa.", Qtype: dns.TypePTR,
		Answer: []dns.RR{test.PTR("0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.2.4.0.0.0.0.d.f.ip6.arpa. 5 IN PTR web.ns1.svc.clusterset.local.")}},
	{Qname: "1.0.1.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("1.0.1.10.in-addr.arpa. 5 IN PTR db-0.cluster-a.db.ns1.svc.clusterset.local.")}},
	{Qname: "2.0.1.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("2.0.1.10.in-addr.arpa. 5 IN PTR 10-1-0-2.cluster-a.db.ns1.svc.clusterset.local.")}},
	{Qname: "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", Qtype: dns.TypePTR,
		Answer: []dns.RR{test.PTR("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa. 5 IN PTR db-0.cluster-a.db.ns1.svc.clusterset.local.")}},
	{Qname: "10.0.42.10.in-addr.arpa.", Qtype: dns.TypeA, Ns: []dns.RR{test.SOA(soaRev)}},
	{Qname: "1.0.2.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeNameError, Ns: []dns.RR{test.SOA(soaRev)}},
	{Qname: "20.0.42.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeNameError, Ns: []dns.RR{test.SOA(soaRev)}},
	{Qname: "3.0.1.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeNameError, Ns: []dns.RR{test.SOA(soaRev)}},
	{Qname: "1.0.9.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeNameError, Ns: []dns.RR{test.SOA(soaRev)}},
	{Qname: "in-addr.arpa.", Qtype: dns.TypeSOA, Answer: []dns.RR{test.SOA(soaRev)}},
	// The dummy-service import itself still has its clusterset name.
	{Qname: "dummied.ns1.svc.clusterset.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("dummied.ns1.svc.clusterset.local. 5 IN A 10.42.0.20")}},
}

func TestMulticlusterServeDNS(t *testing.T) {
	m := newTestPlugin(t, fixture(t))
	for _, tc := range cases {
		t.Run(tc.Qname+"/"+dns.TypeToString[tc.Qtype], func(t *testing.T) {
			w := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := m.ServeDNS(context.Background(), w, tc.Msg()); err != nil {
				t.Fatal(err)
			}
			if !w.Msg.Authoritative {
				t.Error("answer is not authoritative")
			}
			if err := test.SortAndCheck(w.Msg, tc); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMulticlusterNotOurs checks that names outside the zones are refused without a
// next plugin, and that nothing is served before the first sync.
func TestMulticlusterNotOurs(t *testing.T) {
	m := newTestPlugin(t, fixture(t))
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	if rcode, _ := m.ServeDNS(context.Background(), w, test.Case{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeA}.Msg()); rcode != dns.RcodeRefused {
		t.Errorf("cluster.local name: rcode %s, want REFUSED", dns.RcodeToString[rcode])
	}
	fresh := newMulticluster()
	fresh.Zones = []string{"clusterset.local."}
	if rcode, err := fresh.ServeDNS(context.Background(), w, test.Case{Qname: "web.ns1.svc.clusterset.local.", Qtype: dns.TypeA}.Msg()); rcode != dns.RcodeServerFailure || err == nil {
		t.Errorf("before the first sync: rcode %s, error %v; want SERVFAIL with an error", dns.RcodeToString[rcode], err)
	}
}

// TestMulticlusterRotation checks that multi-record answers start one further each time.
func TestMulticlusterRotation(t *testing.T) {
	m := newTestPlugin(t, fixture(t))
	firsts := map[string]bool{}
	for range 3 {
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		m.ServeDNS(context.Background(), w, test.Case{Qname: "db.ns1.svc.clusterset.local.", Qtype: dns.TypeA}.Msg())
		firsts[w.Msg.Answer[0].String()] = true
	}
	if len(firsts) != 3 {
		t.Errorf("3 answers started with %d different records, want 3", len(firsts))
	}
}

// TestMulticlusterReady: ready once a snapshot is served.
func TestMulticlusterReady(t *testing.T) {
	m := newMulticluster()
	if m.Ready() {
		t.Error("ready before the first snapshot")
	}
	m.Publish(dnszone.NewEdit(1).Done())
	if !m.Ready() {
		t.Error("not ready with a snapshot")
	}
}
