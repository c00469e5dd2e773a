package kubeschema

import (
	"context"
	"net/netip"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

func newTestPlugin(t testing.TB, mutate func(*options)) *Kubeschema {
	t.Helper()
	k := newKubeschema()
	k.Zones = []string{"cluster.local.", "in-addr.arpa.", "ip6.arpa."}
	k.NSAddrs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	k.opts.pods = podsInsecure
	if mutate != nil {
		mutate(&k.opts)
	}
	src := fixture(t)
	k.data = src
	k.Publish(newBuilder(k, src).fullBuild())
	return k
}

const soa = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"

func negative() []dns.RR { return []dns.RR{test.SOA(soa)} }

var cases = []test.Case{
	// Apex, version, nameserver.
	{Qname: "cluster.local.", Qtype: dns.TypeSOA, Answer: []dns.RR{test.SOA(soa)}},
	{Qname: "cluster.local.", Qtype: dns.TypeNS, Answer: []dns.RR{test.NS("cluster.local. 5 IN NS ns.dns.cluster.local.")},
		Extra: []dns.RR{test.A("ns.dns.cluster.local. 5 IN A 127.0.0.1")}},
	{Qname: "cluster.local.", Qtype: dns.TypeA, Ns: negative()},
	{Qname: "dns-version.cluster.local.", Qtype: dns.TypeTXT, Answer: []dns.RR{test.TXT(`dns-version.cluster.local. 5 IN TXT "1.1.0"`)}},
	{Qname: "dns-version.cluster.local.", Qtype: dns.TypeA, Ns: negative()},
	{Qname: "ns.dns.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("ns.dns.cluster.local. 5 IN A 127.0.0.1")}},
	{Qname: "dns.cluster.local.", Qtype: dns.TypeA, Ns: negative()},
	// ClusterIP, dual-stack, IPv6 only.
	{Qname: "kubernetes.default.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1")}},
	{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("web.ns1.svc.cluster.local. 5 IN AAAA fd00:10:96::10")}},
	{Qname: "v6only.ns1.svc.cluster.local.", Qtype: dns.TypeA, Ns: negative()},
	{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeMX, Ns: negative()},
	{Qname: "web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{
			test.SRV("_dns._udp.web.ns1.svc.cluster.local. 5 IN SRV 0 100 53 web.ns1.svc.cluster.local."),
			test.SRV("_http._tcp.web.ns1.svc.cluster.local. 5 IN SRV 0 100 80 web.ns1.svc.cluster.local."),
		},
		Extra: []dns.RR{test.A("web.ns1.svc.cluster.local. 5 IN A 10.96.0.10"), test.AAAA("web.ns1.svc.cluster.local. 5 IN AAAA fd00:10:96::10")}},
	{Qname: "_http._tcp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{test.SRV("_http._tcp.web.ns1.svc.cluster.local. 5 IN SRV 0 100 80 web.ns1.svc.cluster.local.")},
		Extra:  []dns.RR{test.A("web.ns1.svc.cluster.local. 5 IN A 10.96.0.10"), test.AAAA("web.ns1.svc.cluster.local. 5 IN AAAA fd00:10:96::10")}},
	{Qname: "_dns._udp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{test.SRV("_dns._udp.web.ns1.svc.cluster.local. 5 IN SRV 0 100 53 web.ns1.svc.cluster.local.")},
		Extra:  []dns.RR{test.A("web.ns1.svc.cluster.local. 5 IN A 10.96.0.10"), test.AAAA("web.ns1.svc.cluster.local. 5 IN AAAA fd00:10:96::10")}},
	{Qname: "_dns._tcp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "_tcp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV, Ns: negative()},
	{Qname: "_sctp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "_http._tcp.web.ns1.svc.cluster.local.", Qtype: dns.TypeA, Ns: negative()},
	// Names that are not there.
	{Qname: "nope.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "ns1.svc.cluster.local.", Qtype: dns.TypeA, Ns: negative()},
	{Qname: "nons.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "svc.cluster.local.", Qtype: dns.TypeA, Ns: negative()},
	{Qname: "x.y.z.web.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "http.tcp.web.ns1.svc.cluster.local.", Qtype: dns.TypeSRV, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "*.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "web.ns1.other.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	// Headless: ready endpoints merged over two slices, unready and terminating left out.
	{Qname: "db.ns1.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{
		test.A("db.ns1.svc.cluster.local. 5 IN A 10.1.0.1"), test.A("db.ns1.svc.cluster.local. 5 IN A 10.1.0.2")}},
	{Qname: "db.ns1.svc.cluster.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("db.ns1.svc.cluster.local. 5 IN AAAA fd00::1")}},
	{Qname: "db-0.db.ns1.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("db-0.db.ns1.svc.cluster.local. 5 IN A 10.1.0.1")}},
	{Qname: "db-0.db.ns1.svc.cluster.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("db-0.db.ns1.svc.cluster.local. 5 IN AAAA fd00::1")}},
	{Qname: "10-1-0-2.db.ns1.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("10-1-0-2.db.ns1.svc.cluster.local. 5 IN A 10.1.0.2")}},
	{Qname: "10-1-0-3.db.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "_pg._tcp.db.ns1.svc.cluster.local.", Qtype: dns.TypeSRV,
		Answer: []dns.RR{
			test.SRV("_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 50 5432 10-1-0-2.db.ns1.svc.cluster.local."),
			test.SRV("_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 50 5432 db-0.db.ns1.svc.cluster.local."),
		},
		Extra: []dns.RR{
			test.A("10-1-0-2.db.ns1.svc.cluster.local. 5 IN A 10.1.0.2"),
			test.A("db-0.db.ns1.svc.cluster.local. 5 IN A 10.1.0.1"),
			test.AAAA("db-0.db.ns1.svc.cluster.local. 5 IN AAAA fd00::1"),
		}},
	{Qname: "empty.ns1.svc.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "notready.ns1.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("notready.ns1.svc.cluster.local. 5 IN A 10.1.1.1")}},
	// ExternalName whose target is ours: the target's records follow.
	{Qname: "ext.ns1.svc.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{
		test.CNAME("ext.ns1.svc.cluster.local. 5 IN CNAME web.ns1.svc.cluster.local."),
		test.A("web.ns1.svc.cluster.local. 5 IN A 10.96.0.10")}},
	{Qname: "ext.ns1.svc.cluster.local.", Qtype: dns.TypeCNAME, Answer: []dns.RR{
		test.CNAME("ext.ns1.svc.cluster.local. 5 IN CNAME web.ns1.svc.cluster.local.")}},
	// Pods (insecure).
	{Qname: "10-2-0-5.ns1.pod.cluster.local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("10-2-0-5.ns1.pod.cluster.local. 5 IN A 10.2.0.5")}},
	{Qname: "10-2-0-5.ns1.pod.cluster.local.", Qtype: dns.TypeAAAA, Ns: negative()},
	{Qname: "10-2-0-256.ns1.pod.cluster.local.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: negative()},
	{Qname: "fd00--5.ns1.pod.cluster.local.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("fd00--5.ns1.pod.cluster.local. 5 IN AAAA fd00::5")}},
	// Case: compared without it, repeated as asked.
	{Qname: "WEB.Ns1.svc.Cluster.Local.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("WEB.Ns1.svc.Cluster.Local. 5 IN A 10.96.0.10")}},
	// Reverse.
	{Qname: "10.0.96.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("10.0.96.10.in-addr.arpa. 5 IN PTR web.ns1.svc.cluster.local.")}},
	{Qname: "1.0.1.10.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("1.0.1.10.in-addr.arpa. 5 IN PTR db-0.db.ns1.svc.cluster.local.")}},
	{Qname: "0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.", Qtype: dns.TypePTR,
		Answer: []dns.RR{test.PTR("0.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa. 5 IN PTR v6only.ns1.svc.cluster.local.")}},
	{Qname: "3.0.1.10.in-addr.arpa.", Qtype: dns.TypePTR, Rcode: dns.RcodeNameError, Ns: []dns.RR{test.SOA("in-addr.arpa. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5")}},
}

func TestServeDNS(t *testing.T) {
	k := newTestPlugin(t, nil)
	for _, tc := range cases {
		t.Run(tc.Qname+"/"+dns.TypeToString[tc.Qtype], func(t *testing.T) {
			w := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := k.ServeDNS(context.Background(), w, tc.Msg()); err != nil {
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

// TestOutOfZone: a name outside the zones (the zone's parent, say) is not
// ours. With no plugin after us the answer is REFUSED, not SERVFAIL.
func TestOutOfZone(t *testing.T) {
	k := newTestPlugin(t, nil)
	for _, name := range []string{"local.", "example.com.", "xcluster.local."} {
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		rcode, err := k.ServeDNS(context.Background(), w, m)
		if rcode != dns.RcodeRefused || err != nil || w.Msg == nil || w.Msg.Rcode != dns.RcodeRefused {
			t.Errorf("%s: rcode %d, err %v, reply %v", name, rcode, err, w.Msg)
		}
	}
}

// TestRotation: a multi-record answer starts one record further on each
// response, and the stored endpoints are not reordered.
func TestRotation(t *testing.T) {
	k := newTestPlugin(t, nil)
	firsts := map[string]bool{}
	for i := 0; i < 4; i++ {
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		m := new(dns.Msg)
		m.SetQuestion("db.ns1.svc.cluster.local.", dns.TypeA)
		k.ServeDNS(context.Background(), w, m)
		if len(w.Msg.Answer) != 2 {
			t.Fatalf("answer %v", w.Msg.Answer)
		}
		firsts[w.Msg.Answer[0].String()] = true
	}
	if len(firsts) != 2 {
		t.Errorf("first records over 4 answers: %v, want both addresses", firsts)
	}
	if first := k.Snapshot().Service("db.ns1").EndpointAddr(0).String(); first != "10.1.0.1" {
		t.Errorf("the stored endpoints were reordered: first is %s", first)
	}
}
