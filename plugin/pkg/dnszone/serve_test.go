package dnszone

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schemadns/schemadns/plugin/pkg/replies"
)

// serveOne answers one question from a snapshot of svcs, as ServeDNS does.
func serveOne(t *testing.T, srv *Server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	r := new(dns.Msg)
	r.SetQuestion(name, qtype)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := srv.ServeDNS(context.Background(), w, r); err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return w.Msg
}

func testServer(zonal bool, svcs ...*Facts) *Server {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "replies"}, []string{"outcome"})
	srv := &Server{Plugin: "test", Zones: []string{"cluster.local."}, TTL: 5, Replies: replies.New(vec), Zonal: zonal}
	e := NewEdit(1)
	for _, s := range svcs {
		e.Put(s)
		e.AddPTRs(s)
	}
	srv.Publish(e.Done())
	return srv
}

// lines are the records of a section as text, sorted (rotation aside).
func lines(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	slices.Sort(out)
	return out
}

func checkReply(t *testing.T, m *dns.Msg, rcode int, answer ...string) {
	t.Helper()
	if m.Rcode != rcode || !m.Authoritative {
		t.Errorf("%s: rcode %s (aa %t), want %s", m.Question[0].Name, dns.RcodeToString[m.Rcode], m.Authoritative, dns.RcodeToString[rcode])
	}
	slices.Sort(answer)
	if got := lines(m.Answer); !slices.Equal(got, answer) {
		t.Errorf("%s %s: answer\n%s\nwant\n%s", m.Question[0].Name, dns.TypeToString[m.Question[0].Qtype], strings.Join(got, "\n"), strings.Join(answer, "\n"))
	}
	if len(m.Answer) == 0 && (len(m.Ns) != 1 || m.Ns[0].Header().Rrtype != dns.TypeSOA) {
		t.Errorf("%s: negative answer without the SOA: %v", m.Question[0].Name, m.Ns)
	}
}

type keep struct {
	test.ResponseWriter
	msg *dns.Msg
}

func (k *keep) WriteMsg(m *dns.Msg) error { k.msg = m; return nil }

// TestPTRAnswers: a PTR answer whose name fits the one-record type, one
// whose name does not, and an address two services share (one record
// each), all name what they should.
func TestPTRAnswers(t *testing.T) {
	long := strings.Repeat("h", 63)
	srv := testServer(false,
		NewVirtual("web.ns1", []netip.Addr{netip.MustParseAddr("10.96.0.7")}, nil),
		NewHeadless("db.ns1", []EndpointFacts{NewEndpoint(netip.MustParseAddr("10.1.0.1"), long, 0, true)}, nil, nil),
		NewVirtual("a.ns1", []netip.Addr{netip.MustParseAddr("10.96.0.9")}, nil),
		NewVirtual("b.ns2", []netip.Addr{netip.MustParseAddr("10.96.0.9")}, nil),
	)
	srv.Zones = append(srv.Zones, "in-addr.arpa.")
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"7.0.96.10.in-addr.arpa.", []string{"7.0.96.10.in-addr.arpa. 5 IN PTR web.ns1.svc.cluster.local."}},
		{"1.0.1.10.in-addr.arpa.", []string{"1.0.1.10.in-addr.arpa. 5 IN PTR " + long + ".db.ns1.svc.cluster.local."}},
		{"9.0.96.10.in-addr.arpa.", []string{"9.0.96.10.in-addr.arpa. 5 IN PTR a.ns1.svc.cluster.local.", "9.0.96.10.in-addr.arpa. 5 IN PTR b.ns2.svc.cluster.local."}},
	} {
		r := new(dns.Msg)
		r.SetQuestion(tc.name, dns.TypePTR)
		w := &keep{}
		if _, err := srv.ServeDNS(context.Background(), w, r); err != nil {
			t.Fatal(err)
		}
		if got := lines(w.msg.Answer); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
