package multicluster

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// FuzzParseName: any input parses to some kind without panicking, the
// strings it returns are pieces of the input, and a name with a cluster ID
// in the reserved place never parses as anything else.
func FuzzMulticlusterParseName(f *testing.F) {
	for _, s := range []string{"", "dns-version", "ns.dns", "dns", "svc", "ns1.svc", "web.ns1.svc", "_http._tcp.web.ns1.svc",
		"_tcp.web.ns1.svc", "cluster-a.web.ns1.svc", "db-0.cluster-a.db.ns1.svc", "x.y.z.db.ns1.svc", "_a.b.web.ns1.svc",
		"a._b.web.ns1.svc", "x\\046y.ns.svc", "..svc", ".", "-a.ns.svc", "web.ns1.pod", strings.Repeat("a", 64) + ".ns.svc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := parseName(s)
		for _, part := range []string{p.namespace, p.service, p.key, p.host, p.port, p.proto} {
			if !strings.Contains(s, part) {
				t.Fatalf("parseName(%q) returned %q, not part of the input", s, part)
			}
		}
		switch p.kind {
		case nameService, nameProto, namePort, nameHost, nameCluster:
			if p.key != p.service+"."+p.namespace || !strings.HasSuffix(s, p.key+".svc") {
				t.Fatalf("parseName(%q): key %q", s, p.key)
			}
		}
		if p.kind == nameHost && strings.Count(p.host, ".") != 1 {
			t.Fatalf("parseName(%q): host %q is not <hostname>.<clusterid>", s, p.host)
		}
		if strings.Count(s, ".") == 3 && strings.HasSuffix(s, ".svc") && p.kind != nameCluster && p.kind != nameProto && p.kind != nameNone {
			t.Fatalf("parseName(%q) = kind %d: the <clusterid>.<svc>.<ns>.svc form must not name anything", s, p.kind)
		}
	})
}

// FuzzServeDNS sends arbitrary names and types through the whole handler:
// never a panic, never SERVFAIL, a negative answer always carries the SOA,
// and every answer record is owned by the name asked, as it was spelled.
func FuzzMulticlusterServeDNS(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.Qname, tc.Qtype)
	}
	f.Add("\\000.svc.clusterset.local.", uint16(1))
	f.Add(strings.Repeat("a.", 120)+"clusterset.local.", uint16(1))
	f.Add("DB-0.cluster-a.DB.ns1.svc.clusterset.local.", uint16(dns.TypeANY))
	m := newTestPlugin(f, fixture(f))
	f.Fuzz(func(t *testing.T, name string, qtype uint16) {
		if _, ok := dns.IsDomainName(name); !ok || !dns.IsFqdn(name) {
			return
		}
		r := new(dns.Msg)
		r.SetQuestion(name, qtype)
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		rcode, _ := m.ServeDNS(context.Background(), w, r)
		if rcode == dns.RcodeServerFailure {
			t.Fatalf("%s %d: SERVFAIL", name, qtype)
		}
		if w.Msg == nil || w.Msg.Rcode == dns.RcodeRefused {
			return // not ours
		}
		if (w.Msg.Rcode == dns.RcodeNameError || len(w.Msg.Answer) == 0) && len(w.Msg.Ns) != 1 {
			t.Fatalf("%s %d: negative answer without SOA: %v", name, qtype, w.Msg)
		}
		for _, rr := range w.Msg.Answer {
			// The bare name's SRV records are those of its ports (as kubeschema has them).
			portSRV := rr.Header().Rrtype == dns.TypeSRV && strings.HasSuffix(rr.Header().Name, "."+strings.ToLower(name))
			if rr.Header().Name != name && !portSRV {
				t.Fatalf("%s %d: answer record owned by %s", name, qtype, rr.Header().Name)
			}
		}
	})
}
