package edns0autopath

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// FuzzEdns0autopathServeDNS sends arbitrary names with arbitrary
// SearchPaths options through the handler: never a panic, never more
// sub-queries than max_search_paths, FORMERR only without sub-queries,
// and a written reply always answers the client's own question.
func FuzzEdns0autopathServeDNS(f *testing.F) {
	for _, tc := range handlerCases {
		f.Add(tc.Qname, strings.Join(tc.option, ","), tc.option != nil)
	}
	f.Add("web.", "a,b,c,d,e,f,g,h,i", true)
	f.Add("x"+search, "", false)
	f.Add(strings.Repeat("a.", 100), "b", true)
	f.Add("web.", "bad..path", true)
	f.Fuzz(func(t *testing.T, qname, value string, withOpt bool) {
		if _, ok := dns.IsDomainName(qname); !ok || !dns.IsFqdn(qname) {
			return
		}
		a, stub := newTestPlugin(t, "edns0autopath {\n max_search_paths 4\n}")
		m := new(dns.Msg)
		m.SetQuestion(qname, dns.TypeA)
		if withOpt {
			withOption(m, value)
		}
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		rcode, _ := a.ServeDNS(context.Background(), w, m)
		if len(stub.asked) > 4 {
			t.Fatalf("%s %q: %d sub-queries", qname, value, len(stub.asked))
		}
		if rcode == dns.RcodeFormatError && len(stub.asked) != 0 {
			t.Fatalf("%s %q: FORMERR after sub-queries", qname, value)
		}
		passed := len(stub.asked) == 1 && stub.asked[0] == strings.ToLower(qname)
		if w.Msg != nil && (w.Msg.Question[0] != m.Question[0] || !passed && w.Msg.IsEdns0() != nil) {
			t.Fatalf("%s %q: reply %v", qname, value, w.Msg)
		}
	})
}
