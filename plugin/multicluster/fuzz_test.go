package multicluster

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// FuzzMulticlusterServeDNS sends arbitrary names and types through the whole handler:
// never a panic, never SERVFAIL, a negative answer always carries the SOA,
// every answer record is owned by the name asked, as it was spelled, and
// the reserved <clusterid>.<svc>.<ns>.svc names never exist.
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
		if rest, ok := strings.CutSuffix(strings.ToLower(name), ".svc.clusterset.local."); ok && strings.Count(rest, ".") == 2 &&
			!strings.HasPrefix(rest, "_") && w.Msg.Rcode != dns.RcodeNameError {
			t.Fatalf("%s %d: the reserved <clusterid>.<svc>.<ns>.svc form answered %s", name, qtype, dns.RcodeToString[w.Msg.Rcode])
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
