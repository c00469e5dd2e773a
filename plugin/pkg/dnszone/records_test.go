package dnszone

import (
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

// recordServer serves sets in the RecordNames model under mesos. and a
// reverse zone, with Mesos-DNS's SOA names and timers.
func recordServer(sets ...*Facts) *Server {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "replies"}, []string{"outcome"})
	srv := &Server{Plugin: "test", Zones: []string{"mesos.", "in-addr.arpa."}, TTL: 60, Replies: replies.New(vec),
		Names:   RecordNames,
		SOA:     SOAFields{NS: "ns1.mesos.", Mbox: "root.ns1.mesos.", Refresh: 60, Retry: 600, Expire: 86400, MinTTL: 60},
		NSAddrs: []netip.Addr{netip.MustParseAddr("10.0.0.53")}}
	e := NewEdit(7)
	for _, s := range sets {
		e.Put(s)
		e.AddPTRs(s)
	}
	srv.Publish(e.Done())
	return srv
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// mesosLike is a task with two instances, their instance names (the only
// ones with PTR records), the agents' names, and SRV records to the
// instances.
func mesosLike() []*Facts {
	return []*Facts{
		NewRecords("search.marathon", addrs("10.0.1.2", "10.0.1.1", "10.0.1.2"), nil, nil),
		NewRecords("search-a-s1.marathon", addrs("10.0.1.1"), nil, AllPTR),
		NewRecords("search-b-s2.marathon", addrs("10.0.1.2"), nil, AllPTR),
		NewRecords("search.marathon.slave", addrs("10.0.0.1", "fd00::1"), nil, nil),
		NewRecords("_search._tcp.marathon", nil, []SRVRecord{
			{Target: "search-b-s2.marathon", Port: 31001, Weight: 1},
			{Target: "search-a-s1.marathon", Port: 31000, Weight: 1},
			{Target: "search-a-s1.marathon", Port: 31002, Weight: 1},
			{Target: "search-a-s1.marathon", Port: 31000, Weight: 1}, // repeated: once
		}, nil),
		NewRecords("ns1", addrs("10.0.0.53"), nil, nil),
	}
}

// TestRecordNames answers the record-set model's names with exact records:
// a name's own addresses (a set: each once), SRV records with each
// target's addresses once in the additional section, ANY, empty
// non-terminals NODATA, absent names and the wrong type's NODATA with the
// zone's SOA, the apex with the schema's own SOA fields, and PTR records
// only from the names that own an address alone.
func TestRecordNames(t *testing.T) {
	srv := recordServer(mesosLike()...)
	soa := "mesos. 60 IN SOA ns1.mesos. root.ns1.mesos. 7 60 600 86400 60"
	for _, tc := range []struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string
		extra  []string
		ns     []string
	}{
		{name: "search.marathon.mesos.", qtype: dns.TypeA, answer: []string{
			"search.marathon.mesos. 60 IN A 10.0.1.1", "search.marathon.mesos. 60 IN A 10.0.1.2"}},
		{name: "SEARCH.Marathon.mesos.", qtype: dns.TypeA, answer: []string{
			"SEARCH.Marathon.mesos. 60 IN A 10.0.1.1", "SEARCH.Marathon.mesos. 60 IN A 10.0.1.2"}},
		{name: "search.marathon.mesos.", qtype: dns.TypeAAAA, ns: []string{soa}},
		{name: "search.marathon.slave.mesos.", qtype: dns.TypeAAAA, answer: []string{"search.marathon.slave.mesos. 60 IN AAAA fd00::1"}},
		{name: "_search._tcp.marathon.mesos.", qtype: dns.TypeSRV, answer: []string{
			"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31000 search-a-s1.marathon.mesos.",
			"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31001 search-b-s2.marathon.mesos.",
			"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31002 search-a-s1.marathon.mesos."},
			extra: []string{"search-a-s1.marathon.mesos. 60 IN A 10.0.1.1", "search-b-s2.marathon.mesos. 60 IN A 10.0.1.2"}},
		{name: "_search._tcp.marathon.mesos.", qtype: dns.TypeANY, answer: []string{
			"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31000 search-a-s1.marathon.mesos.",
			"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31001 search-b-s2.marathon.mesos.",
			"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31002 search-a-s1.marathon.mesos."}},
		{name: "_search._tcp.marathon.mesos.", qtype: dns.TypeA, ns: []string{soa}},
		{name: "search.marathon.mesos.", qtype: dns.TypeTXT, ns: []string{soa}},
		{name: "marathon.mesos.", qtype: dns.TypeA, ns: []string{soa}},        // above search.marathon
		{name: "_tcp.marathon.mesos.", qtype: dns.TypeSRV, ns: []string{soa}}, // above _search._tcp.marathon
		{name: "marathon.slave.mesos.", qtype: dns.TypeA, ns: []string{soa}},
		{name: "slave.mesos.", qtype: dns.TypeA, ns: []string{soa}},
		{name: "web.marathon.mesos.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{soa}},
		{name: "x.search.marathon.mesos.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{soa}},
		{name: "mesos.", qtype: dns.TypeSOA, answer: []string{soa}},
		{name: "mesos.", qtype: dns.TypeNS, answer: []string{"mesos. 60 IN NS ns1.mesos."}, extra: []string{"ns1.mesos. 60 IN A 10.0.0.53"}},
		{name: "ns1.mesos.", qtype: dns.TypeA, answer: []string{"ns1.mesos. 60 IN A 10.0.0.53"}},
		{name: "1.1.0.10.in-addr.arpa.", qtype: dns.TypePTR, answer: []string{"1.1.0.10.in-addr.arpa. 60 IN PTR search-a-s1.marathon.mesos."}},
		{name: "1.0.0.10.in-addr.arpa.", qtype: dns.TypePTR, rcode: dns.RcodeNameError, // an agent's: no name owns it alone here
			ns: []string{"in-addr.arpa. 60 IN SOA ns1.mesos. root.ns1.mesos. 7 60 600 86400 60"}},
	} {
		m := serveOne(t, srv, tc.name, tc.qtype)
		what := tc.name + " " + dns.TypeToString[tc.qtype]
		if m.Rcode != tc.rcode || !m.Authoritative {
			t.Errorf("%s: rcode %s aa %t, want %s", what, dns.RcodeToString[m.Rcode], m.Authoritative, dns.RcodeToString[tc.rcode])
		}
		for _, sec := range []struct {
			name      string
			got, want []string
		}{{"answer", lines(m.Answer), tc.answer}, {"additional", lines(m.Extra), tc.extra}, {"authority", lines(m.Ns), tc.ns}} {
			slices.Sort(sec.want)
			if !slices.Equal(sec.got, sec.want) {
				t.Errorf("%s: %s\n%s\nwant\n%s", what, sec.name, strings.Join(sec.got, "\n"), strings.Join(sec.want, "\n"))
			}
		}
	}
}

// TestRecordSRVsRotate: the SRV records of a name start one further at
// each answer, all of them every time.
func TestRecordSRVsRotate(t *testing.T) {
	srv := recordServer(mesosLike()...)
	firsts := map[uint16]bool{}
	for range 6 {
		m := serveOne(t, srv, "_search._tcp.marathon.mesos.", dns.TypeSRV)
		if len(m.Answer) != 3 {
			t.Fatalf("%d records, want 3", len(m.Answer))
		}
		firsts[m.Answer[0].(*dns.SRV).Port] = true
	}
	if len(firsts) != 3 {
		t.Errorf("first records over six answers: %v, want each of the three", firsts)
	}
}

// TestRecordTransfer lists a record-set zone whole: the SOA, NS, every
// name's records in name order, the SOA again; no dns-version.
func TestRecordTransfer(t *testing.T) {
	srv := recordServer(mesosLike()...)
	ch, err := srv.Transfer("mesos.", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rrs := range ch {
		for _, rr := range rrs {
			got = append(got, strings.ReplaceAll(rr.String(), "\t", " "))
		}
	}
	soa := "mesos. 60 IN SOA ns1.mesos. root.ns1.mesos. 7 60 600 86400 60"
	want := []string{soa, "mesos. 60 IN NS ns1.mesos.",
		"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31000 search-a-s1.marathon.mesos.",
		"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31002 search-a-s1.marathon.mesos.",
		"_search._tcp.marathon.mesos. 60 IN SRV 0 1 31001 search-b-s2.marathon.mesos.",
		"ns1.mesos. 60 IN A 10.0.0.53",
		"search-a-s1.marathon.mesos. 60 IN A 10.0.1.1",
		"search-b-s2.marathon.mesos. 60 IN A 10.0.1.2",
		"search.marathon.mesos. 60 IN A 10.0.1.1", "search.marathon.mesos. 60 IN A 10.0.1.2",
		"search.marathon.slave.mesos. 60 IN A 10.0.0.1", "search.marathon.slave.mesos. 60 IN AAAA fd00::1",
		soa}
	if !slices.Equal(got, want) {
		t.Errorf("transfer:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRecordsEqual: equal record sets compare equal whatever their input
// order; any difference in addresses, SRV records or PTR ownership does
// not.
func TestRecordsEqual(t *testing.T) {
	a := NewRecords("x.fw", addrs("10.0.0.2", "10.0.0.1"), []SRVRecord{{Target: "b", Port: 2}, {Target: "a", Port: 1}}, AllPTR)
	same := NewRecords("x.fw", addrs("10.0.0.1", "10.0.0.2", "10.0.0.1"), []SRVRecord{{Target: "a", Port: 1}, {Target: "b", Port: 2}}, AllPTR)
	if !a.Equal(same) {
		t.Error("equal record sets differ")
	}
	for _, other := range []*Facts{
		NewRecords("y.fw", addrs("10.0.0.1", "10.0.0.2"), same.SRVs(), AllPTR),
		NewRecords("x.fw", addrs("10.0.0.1"), same.SRVs(), AllPTR),
		NewRecords("x.fw", addrs("10.0.0.1", "10.0.0.2"), same.SRVs()[:1], AllPTR),
		NewRecords("x.fw", addrs("10.0.0.1", "10.0.0.2"), same.SRVs(), nil),
		NewVirtual("x.fw", addrs("10.0.0.1", "10.0.0.2"), nil),
	} {
		if a.Equal(other) || other.Equal(a) {
			t.Errorf("%+v equals %+v", other, a)
		}
	}
}

// TestRecordsAnswerAllocations: a record set's A answer costs what a
// service's does (one allocation of records, and the reply's).
func TestRecordsAnswerAllocations(t *testing.T) {
	srv := recordServer(mesosLike()...)
	r := new(dns.Msg)
	r.SetQuestion("search.marathon.mesos.", dns.TypeA)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	allocs := testing.AllocsPerRun(100, func() { _, _ = srv.ServeDNS(t.Context(), w, r) })
	if allocs > 3 {
		t.Errorf("%.0f allocations per answer, want at most 3 (records, reply, recorder)", allocs)
	}
}
