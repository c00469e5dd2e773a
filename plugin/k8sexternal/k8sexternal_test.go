package k8sexternal

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// fakeBackend answers from a table of names; what the whole-server tests
// in test/ cannot reach with either real backend (a load balancer known
// by host name, a reverse name, a failing backend) is tested here.
type fakeBackend map[string][]msg.Service

func (f fakeBackend) External(state request.Request, _ bool) ([]msg.Service, int) {
	switch svcs, ok := f[state.Name()]; {
	case state.Name() == "broken.ns.example.org.":
		return nil, dns.RcodeServerFailure
	case !ok:
		return nil, dns.RcodeNameError
	default:
		return svcs, dns.RcodeSuccess
	}
}

func (f fakeBackend) ExternalAddress(request.Request, bool) []dns.RR {
	return []dns.RR{test.AAAA("x. 0 IN AAAA 2001:db8::53")}
}

func (f fakeBackend) ExternalSerial(string) uint32 { return 1 }

const fakeKey = "/c/org/example/ns/"

var fake = fakeBackend{
	"host.ns.example.org.": { // a load balancer by host name, two ports
		{Host: "lb.example.net", Port: 80, Key: fakeKey + "host"},
		{Host: "lb.example.net", Port: 443, Key: fakeKey + "host"},
	},
	"1.2.0.192.in-addr.arpa.": {{Host: "web.ns", Key: "/c/arpa/in-addr/192/0/2/1"}},
	"three.ns.example.org.": { // three addresses, one port: weight 33
		{Host: "192.0.2.1", Port: 80, Key: fakeKey + "three"},
		{Host: "192.0.2.2", Port: 80, Key: fakeKey + "three/a"},
		{Host: "192.0.2.3", Port: 80, Key: fakeKey + "three/b"},
	},
}

const fakeSOA = "example.org. 5 IN SOA ns1.dns.example.org. hostmaster.dns.example.org. 1 7200 1800 86400 5"

func TestServeDNS(t *testing.T) {
	e := &External{Zones: []string{"example.org.", "in-addr.arpa."}, apex: "dns", ttl: 5, backend: fake, upstream: upstream.New()}
	soa := []dns.RR{test.SOA(fakeSOA)}
	for _, tc := range []test.Case{
		// One CNAME whatever the number of ports; the chain is not
		// reachable here, so nothing follows it.
		{Qname: "host.ns.example.org.", Qtype: dns.TypeA, Answer: []dns.RR{test.CNAME("host.ns.example.org. 5 IN CNAME lb.example.net.")}},
		{Qname: "host.ns.example.org.", Qtype: dns.TypeSRV, Answer: []dns.RR{
			test.SRV("host.ns.example.org. 5 IN SRV 0 50 443 lb.example.net."), // sorted as SortAndCheck sorts
			test.SRV("host.ns.example.org. 5 IN SRV 0 50 80 lb.example.net."),
		}},
		{Qname: "three.ns.example.org.", Qtype: dns.TypeSRV, Answer: []dns.RR{
			test.SRV("three.ns.example.org. 5 IN SRV 0 33 80 a.three.ns.example.org."),
			test.SRV("three.ns.example.org. 5 IN SRV 0 33 80 b.three.ns.example.org."),
			test.SRV("three.ns.example.org. 5 IN SRV 0 33 80 three.ns.example.org."),
		}, Extra: []dns.RR{
			test.A("a.three.ns.example.org. 5 IN A 192.0.2.2"),
			test.A("b.three.ns.example.org. 5 IN A 192.0.2.3"),
			test.A("three.ns.example.org. 5 IN A 192.0.2.1"),
		}},
		{Qname: "1.2.0.192.in-addr.arpa.", Qtype: dns.TypePTR, Answer: []dns.RR{test.PTR("1.2.0.192.in-addr.arpa. 5 IN PTR web.ns.example.org.")}},
		{Qname: "broken.ns.example.org.", Qtype: dns.TypeA, Rcode: dns.RcodeServerFailure, Ns: soa},
		{Qname: "gone.ns.example.org.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: soa},
		{Qname: "three.ns.example.org.", Qtype: dns.TypeMX, Ns: soa},
		// The name server and its apex label.
		{Qname: "NS1.dns.example.org.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("NS1.dns.example.org. 5 IN AAAA 2001:db8::53")}},
		{Qname: "ns1.dns.example.org.", Qtype: dns.TypeA, Ns: soa},
		{Qname: "dns.example.org.", Qtype: dns.TypeA, Ns: soa},
		{Qname: "x.ns1.dns.example.org.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: soa},
	} {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := e.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
			t.Errorf("%s: %v", tc.Qname, err)
			continue
		}
		if !rec.Msg.Authoritative {
			t.Errorf("%s: AA not set", tc.Qname)
		}
		if err := test.SortAndCheck(rec.Msg, tc); err != nil {
			t.Errorf("%s %s: %v", tc.Qname, dns.TypeToString[tc.Qtype], err)
		}
	}
}

// TestTransferNames: names with a "_" label (the stock plugin's SRV names
// of unnamed ports) are not transferred; the lists' keys name their
// service.
func TestTransferNames(t *testing.T) {
	got := zoneNames([]msg.Service{{Key: fakeKey + "web"}, {Key: fakeKey + "web/_tcp/_"}, {Key: fakeKey + "web/_tcp/_http"}},
		map[string][]msg.Service{fakeKey + "hl/endpoint": {{Key: fakeKey + "hl/web-0"}}})
	want := []string{"_http._tcp.web.ns.example.org.", "hl.ns.example.org.", "web-0.hl.ns.example.org.", "web.ns.example.org."}
	if len(got) != len(want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("names %q, want %q", got, want)
			break
		}
	}
}
