package kubeschema

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// FuzzParsePod: any input parses to some kind without panicking, and the
// namespace it returns is a piece of the input.
func FuzzParsePod(f *testing.F) {
	for _, s := range []string{"", "ns1", "10-1-2-3.ns1", "fd00--1.ns1", "a.b.ns1", "x\\046y.ns", "-a.ns", "10-1-2-256.ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := parsePod(s)
		if !strings.Contains(s, p.namespace) {
			t.Fatalf("parsePod(%q) returned namespace %q, not part of the input", s, p.namespace)
		}
		if p.kind == namePod && !p.addr.IsValid() {
			t.Fatalf("parsePod(%q): a pod name without an address", s)
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

// FuzzParseExternalName: any name below the external zone splits without
// panicking, into pieces of the name, and only names of one to four
// labels split at all.
func FuzzParseExternalName(f *testing.F) {
	for _, s := range []string{"web.ns1.example.org.", "_http._tcp.web.ns1.example.org.", "pet-0.db.ns1.example.org.", "ns1.example.org.",
		"example.org.", "a.b.c.d.e.example.org.", "x\\.y.ns1.example.org.", "..example.org.", "web.ns1.other.org."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := parseExternalName(strings.ToLower(name), "example.org.")
		if !ok {
			return
		}
		for _, piece := range []string{n.namespace, n.service, n.endpoint, n.port, n.proto} {
			if !strings.Contains(strings.ToLower(name), piece) {
				t.Fatalf("parseExternalName(%q) = %+v: %q is not part of the name", name, n, piece)
			}
		}
		if n.service == "" && (n.endpoint != "" || n.port != "") {
			t.Fatalf("parseExternalName(%q) = %+v: an endpoint or port without a service", name, n)
		}
	})
}
