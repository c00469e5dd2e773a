package edns0autopath

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/schemadns/schemadns/plugin/pkg/searchpath"
)

// stubChain stands for the rest of the chain (kubeschema, forward): fixed
// data, and a record of the names asked, in order.
type stubChain struct {
	mu    sync.Mutex
	asked []string
	// code is the option that must never reach the chain in an expansion
	// (0: not checked, for queries passed on untouched).
	code uint16
}

const (
	soaCluster = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"
	soaCorp    = "corp.example.net. 60 IN SOA ns.corp.example.net. h.corp.example.net. 1 7200 1800 86400 30"
	soaRoot    = ". 300 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400"
)

var errBroken = errors.New("the API server is away")

func (s *stubChain) Name() string { return "stub" }

func (s *stubChain) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	name := strings.ToLower(r.Question[0].Name)
	s.mu.Lock()
	s.asked = append(s.asked, name)
	s.mu.Unlock()
	if _, found, _ := searchpath.Find(r, s.code); found && s.code != 0 {
		panic("the option reached the rest of the chain")
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	switch name {
	case "web.default.svc.cluster.local.":
		if r.Question[0].Qtype == dns.TypeA {
			m.Answer = []dns.RR{test.A("web.default.svc.cluster.local. 5 IN A 10.96.0.10")}
		} else {
			m.Ns = []dns.RR{test.SOA(soaCluster)}
		}
	case "db.otherns.svc.cluster.local.":
		m.Answer = []dns.RR{test.A("db.otherns.svc.cluster.local. 5 IN A 10.96.0.20")}
	case "otherns.svc.cluster.local.": // a namespace: the name exists, without records
		m.Ns = []dns.RR{test.SOA(soaCluster)}
	case "www.example.com.":
		m.Authoritative = false
		m.Answer = []dns.RR{test.CNAME("www.example.com. 300 IN CNAME example.com."), test.A("example.com. 30 IN A 203.0.113.10")}
	case "broken.default.svc.cluster.local.":
		return dns.RcodeServerFailure, errBroken
	case "refused.default.svc.cluster.local.":
		m.Rcode = dns.RcodeRefused
	default:
		m.Rcode = dns.RcodeNameError
		switch {
		case strings.HasSuffix(name, ".cluster.local."):
			m.Ns = []dns.RR{test.SOA(soaCluster)}
		case strings.HasSuffix(name, ".corp.example.net."):
			m.Ns = []dns.RR{test.SOA(soaCorp)}
		default:
			m.Ns = []dns.RR{test.SOA(soaRoot)}
		}
	}
	m.SetEdns0(1232, false) // as the server's writer would: must not reach the client as is
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

func newTestPlugin(t testing.TB, corefile string) (*Edns0autopath, *stubChain) {
	t.Helper()
	a, err := parse(caddy.NewTestController("dns", corefile))
	if err != nil {
		t.Fatal(err)
	}
	s := &stubChain{code: a.code}
	a.Next = s
	return a, s
}

// paths is the option value gensearchpath sends for namespace default with
// one host-level domain.
var paths = []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example.net"}

// withOption adds the SearchPaths option with paths to the case's query.
func withOption(m *dns.Msg, paths ...string) *dns.Msg {
	searchpath.Attach(m, searchpath.DefaultCode, []byte(strings.Join(paths, ",")), 1232)
	return m
}

const search = ".search.default.cluster.local.ap.k8s.io."

type handlerCase struct {
	test.Case
	option []string // the SearchPaths option; nil: none
	asked  []string // the names the rest of the chain must see, in order
	passed bool     // passed on untouched: the reply is the chain's own
}

var handlerCases = []handlerCase{
	{ // A short service name, found under the first path.
		Case: test.Case{Qname: "web.", Qtype: dns.TypeA, Authoritative: true, Answer: []dns.RR{
			test.CNAME("web. 5 IN CNAME web.default.svc.cluster.local."),
			test.A("web.default.svc.cluster.local. 5 IN A 10.96.0.10"),
		}},
		option: paths, asked: []string{"web.default.svc.cluster.local."},
	},
	{ // NODATA counts as found: the CNAME takes the SOA's TTL.
		Case: test.Case{Qname: "web.", Qtype: dns.TypeAAAA, Authoritative: true,
			Answer: []dns.RR{test.CNAME("web. 5 IN CNAME web.default.svc.cluster.local.")},
			Ns:     []dns.RR{test.SOA(soaCluster)}},
		option: paths, asked: []string{"web.default.svc.cluster.local."},
	},
	{ // <svc>.<ns>: the first path misses, the second finds.
		Case: test.Case{Qname: "db.otherns.", Qtype: dns.TypeA, Authoritative: true, Answer: []dns.RR{
			test.CNAME("db.otherns. 5 IN CNAME db.otherns.svc.cluster.local."),
			test.A("db.otherns.svc.cluster.local. 5 IN A 10.96.0.20"),
		}},
		option: paths, asked: []string{"db.otherns.default.svc.cluster.local.", "db.otherns.svc.cluster.local."},
	},
	{ // A namespace name is NODATA under svc.<zone>, which stops the search.
		Case: test.Case{Qname: "otherns.", Qtype: dns.TypeA, Authoritative: true,
			Answer: []dns.RR{test.CNAME("otherns. 5 IN CNAME otherns.svc.cluster.local.")},
			Ns:     []dns.RR{test.SOA(soaCluster)}},
		option: paths, asked: []string{"otherns.default.svc.cluster.local.", "otherns.svc.cluster.local."},
	},
	{ // Every path NXDOMAIN: NXDOMAIN with the last path's SOA, no fallthrough.
		Case: test.Case{Qname: "missing.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Authoritative: true,
			Ns: []dns.RR{test.SOA(soaCorp)}},
		option: paths, asked: []string{"missing.default.svc.cluster.local.", "missing.svc.cluster.local.",
			"missing.cluster.local.", "missing.corp.example.net."},
	},
	{ // An error stops the search: the later path that would answer is never asked.
		Case:   test.Case{Qname: "broken.", Qtype: dns.TypeA, Rcode: dns.RcodeServerFailure, Error: errBroken},
		option: []string{"default.svc.cluster.local", "otherns.svc.cluster.local"}, asked: []string{"broken.default.svc.cluster.local."},
	},
	{ // So does an error the chain wrote itself.
		Case:   test.Case{Qname: "refused.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused, Authoritative: true},
		option: paths, asked: []string{"refused.default.svc.cluster.local."},
	},
	{ // The client's spelling is kept in the question and the CNAME.
		Case: test.Case{Qname: "WEB.", Qtype: dns.TypeA, Authoritative: true, Answer: []dns.RR{
			test.CNAME("WEB. 5 IN CNAME WEB.default.svc.cluster.local."),
			test.A("web.default.svc.cluster.local. 5 IN A 10.96.0.10"),
		}},
		option: paths, asked: []string{"web.default.svc.cluster.local."},
	},
	{ // Without the option, a name in the search domain: the schema v1 paths.
		Case: test.Case{Qname: "web" + search, Qtype: dns.TypeA, Authoritative: true, Answer: []dns.RR{
			test.CNAME("web" + search + " 5 IN CNAME web.default.svc.cluster.local."),
			test.A("web.default.svc.cluster.local. 5 IN A 10.96.0.10"),
		}},
		asked: []string{"web.default.svc.cluster.local."},
	},
	{ // ... and, when they all miss, the base name as it is.
		Case: test.Case{Qname: "www.example.com" + search, Qtype: dns.TypeA, Answer: []dns.RR{
			test.CNAME("www.example.com" + search + " 30 IN CNAME www.example.com."),
			test.CNAME("www.example.com. 300 IN CNAME example.com."),
			test.A("example.com. 30 IN A 203.0.113.10"),
		}},
		asked: []string{"www.example.com.default.svc.cluster.local.", "www.example.com.svc.cluster.local.",
			"www.example.com.cluster.local.", "www.example.com."},
	},
	{ // Nothing anywhere: NXDOMAIN after four sub-queries.
		Case:  test.Case{Qname: "missing" + search, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Authoritative: true, Ns: []dns.RR{test.SOA(soaRoot)}},
		asked: []string{"missing.default.svc.cluster.local.", "missing.svc.cluster.local.", "missing.cluster.local.", "missing."},
	},
	{ // The option wins over the name's form: its paths are appended to the whole name.
		Case:   test.Case{Qname: "web" + search, Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Authoritative: true, Ns: []dns.RR{test.SOA(soaCorp)}},
		option: []string{"corp.example.net"}, asked: []string{"web" + search + "corp.example.net."},
	},
	{ // Anything else passes on untouched.
		Case: test.Case{Qname: "web.default.svc.cluster.local.", Qtype: dns.TypeA, Authoritative: true,
			Answer: []dns.RR{test.A("web.default.svc.cluster.local. 5 IN A 10.96.0.10")}},
		asked: []string{"web.default.svc.cluster.local."}, passed: true,
	},
	{ // A search domain of another cluster is not ours.
		Case:  test.Case{Qname: "web.search.default.other.local.ap.k8s.io.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Authoritative: true, Ns: []dns.RR{test.SOA(soaRoot)}},
		asked: []string{"web.search.default.other.local.ap.k8s.io."}, passed: true,
	},
}

func TestEdns0autopathServeDNS(t *testing.T) {
	for _, tc := range handlerCases {
		t.Run(tc.Qname+"/"+dns.TypeToString[tc.Qtype], func(t *testing.T) {
			a, stub := newTestPlugin(t, "edns0autopath")
			m := tc.Msg()
			if tc.option != nil {
				withOption(m, tc.option...)
			}
			w := dnstest.NewRecorder(&test.ResponseWriter{})
			_, err := a.ServeDNS(context.Background(), w, m)
			if !errors.Is(err, tc.Error) {
				t.Fatalf("error %v, want %v", err, tc.Error)
			}
			if !slices.Equal(stub.asked, tc.asked) {
				t.Errorf("the chain was asked\n%q\nwant\n%q", stub.asked, tc.asked)
			}
			if tc.Error != nil {
				if w.Msg != nil {
					t.Errorf("wrote a reply on error: %v", w.Msg)
				}
				return
			}
			if w.Msg == nil {
				t.Fatal("no reply")
			}
			if tc.passed {
				w.Msg.Extra = nil // the stub's OPT
				if err := test.SortAndCheck(w.Msg, sorted(tc.Case)); err != nil {
					t.Error(err)
				}
				return
			}
			checkReply(t, w.Msg, m, tc.Case)
		})
	}
}

// checkReply compares the reply with the case and checks what every reply
// must be: the client's question, the CNAME first, no OPT record.
func checkReply(t *testing.T, got, query *dns.Msg, want test.Case) {
	t.Helper()
	if got.Question[0] != query.Question[0] || got.Id != query.Id {
		t.Errorf("question %v id %d, want %v id %d", got.Question[0], got.Id, query.Question[0], query.Id)
	}
	if len(got.Answer) > 0 && got.Answer[0].Header().Name != query.Question[0].Name {
		t.Errorf("the first answer is not owned by the question: %v", got.Answer[0])
	}
	if got.IsEdns0() != nil {
		t.Errorf("the reply carries an OPT record: the server adds the client's")
	}
	if err := test.CNAMEOrder(got); err != nil {
		t.Error(err)
	}
	if err := test.SortAndCheck(got, sorted(want)); err != nil {
		t.Errorf("%v\n%v", err, got)
	}
	if got.Authoritative != want.Authoritative {
		t.Errorf("AA %v, want %v", got.Authoritative, want.Authoritative)
	}
}

// sorted sorts the case's sections as test.SortAndCheck sorts the reply's.
func sorted(tc test.Case) test.Case {
	for _, sec := range []*[]dns.RR{&tc.Answer, &tc.Ns, &tc.Extra} {
		*sec = slices.Clone(*sec)
		sort.Sort(test.RRSet(*sec))
	}
	return tc
}

func TestEdns0autopathServeDNSLimits(t *testing.T) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63)
	tests := []struct {
		name  string
		qname string
		value []byte
		twice bool
	}{
		{"nine paths", "web.", []byte(strings.Repeat("a,", 8) + "a"), false},
		{"a path that is not a name", "web.", []byte("default.svc.cluster.local,bad..path"), false},
		{"a trailing dot", "web.", []byte("cluster.local."), false},
		{"empty", "web.", []byte{}, false},
		{"over 512 octets", "web.", []byte(strings.Repeat("x", 300) + "," + strings.Repeat("y", 250)), false},
		{"a joined name over 255 octets", strings.Repeat("d", 63) + "." + strings.Repeat("e", 60) + ".", []byte(long), false},
		{"the option twice", "web.", []byte("cluster.local"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, stub := newTestPlugin(t, "edns0autopath")
			m := new(dns.Msg)
			m.SetQuestion(tc.qname, dns.TypeA)
			searchpath.Attach(m, searchpath.DefaultCode, tc.value, 1232)
			if tc.twice {
				opt := m.IsEdns0()
				opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: searchpath.DefaultCode, Data: tc.value})
			}
			w := dnstest.NewRecorder(&test.ResponseWriter{})
			rcode, err := a.ServeDNS(context.Background(), w, m)
			if rcode != dns.RcodeFormatError || err != nil || w.Msg != nil {
				t.Errorf("rcode %s, error %v, reply %v: want FORMERR written by the server", dns.RcodeToString[rcode], err, w.Msg)
			}
			if len(stub.asked) != 0 {
				t.Errorf("sub-queries sent: %q", stub.asked)
			}
		})
	}
}

func TestEdns0autopathServeDNSMaxSearchPaths(t *testing.T) {
	a, stub := newTestPlugin(t, "edns0autopath {\n max_search_paths 2\n}")
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	m := new(dns.Msg)
	m.SetQuestion("missing"+search, dns.TypeA)
	a.ServeDNS(context.Background(), w, m)
	if len(stub.asked) != 2 || w.Msg == nil || w.Msg.Rcode != dns.RcodeNameError {
		t.Errorf("max_search_paths 2: asked %q, reply %v", stub.asked, w.Msg)
	}
	stub.asked = nil
	if rcode, _ := a.ServeDNS(context.Background(), w, withOption(m.Copy(), "a", "b", "c")); rcode != dns.RcodeFormatError || len(stub.asked) != 0 {
		t.Errorf("three paths over a limit of two: %s, asked %q", dns.RcodeToString[rcode], stub.asked)
	}
}

func TestEdns0autopathServeDNSZonesAndTypes(t *testing.T) {
	a, stub := newTestPlugin(t, "edns0autopath cluster.local {\n option_code 65001\n}")
	stub.code = 0 // these queries pass on untouched, option and all
	for _, m := range []*dns.Msg{
		withOption(new(dns.Msg).SetQuestion("web.", dns.TypeA), "default.svc.cluster.local"), // outside the zones
		func() *dns.Msg { // the default code is not the configured one
			m := new(dns.Msg).SetQuestion("web.cluster.local.", dns.TypeA)
			return withOption(m, "x")
		}(),
		func() *dns.Msg { // a transfer is never expanded
			m := new(dns.Msg).SetQuestion("cluster.local.", dns.TypeAXFR)
			searchpath.Attach(m, 65001, []byte("x"), 1232)
			return m
		}(),
	} {
		stub.asked = nil
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		a.ServeDNS(context.Background(), w, m)
		if want := []string{strings.ToLower(m.Question[0].Name)}; !slices.Equal(stub.asked, want) {
			t.Errorf("%s: asked %q, want it passed on as %q", m.Question[0].Name, stub.asked, want)
		}
	}
	stub.asked, stub.code = nil, 65001
	m := new(dns.Msg).SetQuestion("web.cluster.local.", dns.TypeA)
	searchpath.Attach(m, 65001, []byte("default.svc"), 1232)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	a.ServeDNS(context.Background(), w, m)
	if !slices.Equal(stub.asked, []string{"web.cluster.local.default.svc."}) {
		t.Errorf("option 65001: asked %q", stub.asked)
	}
}

func TestEdns0autopathLimiter(t *testing.T) {
	l := newLimiter()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if ok, held := l.allow(now); !ok || held != 0 {
		t.Fatalf("first event: %v %d", ok, held)
	}
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow(now.Add(59 * time.Second)); ok {
			t.Fatal("a second event within the minute passed")
		}
	}
	if ok, held := l.allow(now.Add(61 * time.Second)); !ok || held != 3 {
		t.Fatalf("after a minute: %v, held %d", ok, held)
	}
}

// TestEdns0autopathMetrics: expansions by source and outcome, sub-queries
// per expansion, fallthroughs.
func TestEdns0autopathMetrics(t *testing.T) {
	a, _ := newTestPlugin(t, "edns0autopath")
	serve := func(m *dns.Msg) { a.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m) }
	read := func() [5]float64 {
		return [5]float64{
			metricValue(expansions.WithLabelValues("", sourceOption, outcomeFound)),
			metricValue(expansions.WithLabelValues("", sourceName, outcomeNXDOMAIN)),
			metricValue(expansions.WithLabelValues("", sourceOption, outcomeFormErr)),
			metricValue(fallthroughs.WithLabelValues("")),
			metricValue(subqueries.WithLabelValues("", sourceName).(prometheus.Metric)), // sum of sub-queries
		}
	}
	before := read()
	serve(withOption(new(dns.Msg).SetQuestion("db.otherns.", dns.TypeA), paths...)) // found, 2 sub-queries
	serve(new(dns.Msg).SetQuestion("missing"+search, dns.TypeA))                    // nxdomain, 4 sub-queries, a fallthrough
	serve(withOption(new(dns.Msg).SetQuestion("web.", dns.TypeA), "a..b"))          // formerr
	after := read()
	want := [5]float64{1, 1, 1, 1, 4}
	for i := range want {
		if after[i]-before[i] != want[i] {
			t.Errorf("metric %d went from %v to %v, want +%v", i, before[i], after[i], want[i])
		}
	}
}

// metricValue is a counter's value or a histogram's sum.
func metricValue(m prometheus.Metric) float64 {
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		panic(err)
	}
	if h := pb.GetHistogram(); h != nil {
		return h.GetSampleSum()
	}
	return pb.GetCounter().GetValue()
}
