package kubeschema

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// FuzzParseName: any input parses to some kind without panicking, and the
// strings it returns are pieces of the input.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"", "dns-version", "ns.dns", "web.ns1.svc", "_http._tcp.web.ns1.svc", "h.web.ns1.svc",
		"_tcp.web.ns1.svc", "10-1-2-3.ns1.pod", "fd00--1.ns1.pod", "a.b.c.d.e.f.svc", "x\\046y.ns.svc", "..svc", ".", "-a.ns.svc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := parseName(s)
		for _, part := range []string{p.namespace, p.key, p.service, p.host, p.port, p.proto} {
			if !strings.Contains(s, part) {
				t.Fatalf("parseName(%q) returned %q, not part of the input", s, part)
			}
		}
		if p.kind == nameService && p.key != p.service+"."+p.namespace {
			t.Fatalf("parseName(%q): key %q", s, p.key)
		}
	})
}

// FuzzServeDNS sends arbitrary names and types through the whole handler:
// never a panic, never SERVFAIL, and a negative answer always carries the
// SOA.
func FuzzServeDNS(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.Qname, tc.Qtype)
	}
	f.Add("\\000.svc.cluster.local.", uint16(1))
	f.Add(strings.Repeat("a.", 120)+"cluster.local.", uint16(1))
	k := newTestPlugin(f, nil)
	f.Fuzz(func(t *testing.T, name string, qtype uint16) {
		if _, ok := dns.IsDomainName(name); !ok || !dns.IsFqdn(name) {
			return
		}
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		rcode, _ := k.ServeDNS(context.Background(), w, m)
		if rcode == dns.RcodeServerFailure {
			t.Fatalf("%s %d: SERVFAIL", name, qtype)
		}
		if w.Msg == nil {
			return // not ours: passed on (no next plugin here)
		}
		if (w.Msg.Rcode == dns.RcodeNameError || len(w.Msg.Answer) == 0) && w.Msg.Rcode != dns.RcodeRefused && len(w.Msg.Ns) != 1 {
			t.Fatalf("%s %d: negative answer without SOA: %v", name, qtype, w.Msg)
		}
	})
}
