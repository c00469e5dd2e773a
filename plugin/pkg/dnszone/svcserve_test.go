package dnszone

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestZonalNames: a pin selects the endpoints of the zone, prefer falls
// back to all, other types are NODATA, virtual services and a server
// without the option have no such names; a headless service without
// endpoints has its zonal names (NODATA) and no other.
func TestZonalNames(t *testing.T) {
	a := netip.MustParseAddr
	groups := []Group{{}, {Zone: "zone-a"}, {Zone: "zone-b"}}
	db := NewHeadless("db.ns1", []EndpointFacts{
		NewEndpoint(a("10.0.0.1"), "", 1, true), NewEndpoint(a("10.0.0.2"), "", 2, true), NewEndpoint(a("10.0.0.3"), "", 0, true),
	}, []SRVPort{{Name: "pg", Proto: "tcp", Number: 5432}}, groups)
	web := NewVirtual("web.ns1", []netip.Addr{a("10.96.0.1")}, nil)
	empty := NewHeadless("empty.ns1", nil, nil, nil)
	srv := testServer(true, db, web, empty)
	checkReply(t, serveOne(t, srv, "zone-a.pin._zone.empty.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeSuccess)
	checkReply(t, serveOne(t, srv, "empty.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeNameError)
	pin := "zone-a.pin._zone.db.ns1.svc.cluster.local."
	checkReply(t, serveOne(t, srv, pin, dns.TypeA), dns.RcodeSuccess, pin+" 5 IN A 10.0.0.1")
	checkReply(t, serveOne(t, srv, "ZONE-B.pin._zone.db.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeSuccess, "ZONE-B.pin._zone.db.ns1.svc.cluster.local. 5 IN A 10.0.0.2")
	checkReply(t, serveOne(t, srv, pin, dns.TypeSRV), dns.RcodeSuccess, pin+" 5 IN SRV 0 100 5432 10-0-0-1.db.ns1.svc.cluster.local.")
	checkReply(t, serveOne(t, srv, pin, dns.TypeTXT), dns.RcodeSuccess)
	checkReply(t, serveOne(t, srv, pin, dns.TypeANY), dns.RcodeSuccess)
	checkReply(t, serveOne(t, srv, "zone-c.pin._zone.db.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeSuccess)
	prefer := "zone-c.prefer._zone.db.ns1.svc.cluster.local."
	checkReply(t, serveOne(t, srv, prefer, dns.TypeA), dns.RcodeSuccess, prefer+" 5 IN A 10.0.0.1", prefer+" 5 IN A 10.0.0.2", prefer+" 5 IN A 10.0.0.3")
	checkReply(t, serveOne(t, srv, "zone-a.prefer._zone.db.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeSuccess, "zone-a.prefer._zone.db.ns1.svc.cluster.local. 5 IN A 10.0.0.1")
	checkReply(t, serveOne(t, srv, "zone-a.pin._zone.web.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeNameError)
	checkReply(t, serveOne(t, srv, "zone-a.pin._zone.none.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeNameError)
	checkReply(t, serveOne(t, srv, "zone-a.near._zone.db.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeNameError)
	checkReply(t, serveOne(t, testServer(false, db), pin, dns.TypeA), dns.RcodeNameError)
}

// TestPreferredGroups: the service name answers with the preferred
// endpoints when there are any; host names and PTR records are not
// filtered; without preferred endpoints every endpoint answers.
func TestPreferredGroups(t *testing.T) {
	a := netip.MustParseAddr
	groups := []Group{{Suffix: ".local-c", Preferred: true}, {Suffix: ".remote-c"}}
	db := NewHeadless("db.ns1", []EndpointFacts{
		NewEndpoint(a("10.0.0.1"), "db-0", 0, true), NewEndpoint(a("10.1.0.1"), "db-0", 1, true),
	}, []SRVPort{{Name: "pg", Proto: "tcp", Number: 5432}}, groups)
	remoteOnly := NewHeadless("cache.ns1", []EndpointFacts{NewEndpoint(a("10.1.0.2"), "", 1, true)}, nil, groups)
	srv := testServer(false, db, remoteOnly)
	name := "db.ns1.svc.cluster.local."
	checkReply(t, serveOne(t, srv, name, dns.TypeA), dns.RcodeSuccess, name+" 5 IN A 10.0.0.1")
	m := serveOne(t, srv, name, dns.TypeSRV)
	checkReply(t, m, dns.RcodeSuccess, "_pg._tcp."+name+" 5 IN SRV 0 100 5432 db-0.local-c."+name)
	if got := lines(m.Extra); !slices.Equal(got, []string{"db-0.local-c." + name + " 5 IN A 10.0.0.1"}) {
		t.Errorf("SRV extra: %v", got)
	}
	checkReply(t, serveOne(t, srv, "_pg._tcp."+name, dns.TypeSRV), dns.RcodeSuccess, "_pg._tcp."+name+" 5 IN SRV 0 100 5432 db-0.local-c."+name)
	checkReply(t, serveOne(t, srv, "db-0.remote-c."+name, dns.TypeA), dns.RcodeSuccess, "db-0.remote-c."+name+" 5 IN A 10.1.0.1")
	checkReply(t, serveOne(t, srv, "cache.ns1.svc.cluster.local.", dns.TypeA), dns.RcodeSuccess, "cache.ns1.svc.cluster.local. 5 IN A 10.1.0.2")
	if s := srv.Snapshot(); len(s.ptrOf(a("10.1.0.1"))) != 1 {
		t.Errorf("the remote endpoint lost its PTR")
	}
}

// TestAliasChains: an alias's CNAME comes first, then the next alias's or
// the target's records, whether the last hop renders the CNAME into its
// block (addresses) or the alias adds it (SRV, NODATA, a loop).
func TestAliasChains(t *testing.T) {
	eps := make([]EndpointFacts, 3)
	for i := range eps {
		eps[i] = NewEndpoint(netip.AddrFrom4([4]byte{10, 1, 0, byte(i + 1)}), "", 0, true)
	}
	srv := testServer(false,
		NewHeadless("db.ns1", eps, []SRVPort{{Name: "pg", Proto: "tcp", Number: 5432}}, nil),
		NewVirtual("web.ns1", []netip.Addr{netip.MustParseAddr("10.96.0.7")}, nil),
		NewAlias("a1.ns1", "a2.ns1.svc.cluster.local."),
		NewAlias("a2.ns1", "db.ns1.svc.cluster.local."),
		NewAlias("w.ns1", "web.ns1.svc.cluster.local."),
		NewAlias("loop.ns1", "loop.ns1.svc.cluster.local."),
	)
	const a1, a2 = "a1.ns1.svc.cluster.local. 5 IN CNAME a2.ns1.svc.cluster.local.", "a2.ns1.svc.cluster.local. 5 IN CNAME db.ns1.svc.cluster.local."
	dbA := []string{"db.ns1.svc.cluster.local. 5 IN A 10.1.0.1", "db.ns1.svc.cluster.local. 5 IN A 10.1.0.2", "db.ns1.svc.cluster.local. 5 IN A 10.1.0.3"}
	for _, tc := range []struct {
		name    string
		qtype   uint16
		cnames  []string
		records []string
	}{
		{"a2", dns.TypeA, []string{a2}, dbA},
		{"a1", dns.TypeA, []string{a1, a2}, dbA},
		{"a1", dns.TypeAAAA, []string{a1, a2}, nil},
		{"a2", dns.TypeSRV, []string{a2}, []string{"_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 33 5432 10-1-0-1.db.ns1.svc.cluster.local.",
			"_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 33 5432 10-1-0-2.db.ns1.svc.cluster.local.", "_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 33 5432 10-1-0-3.db.ns1.svc.cluster.local."}},
		{"w", dns.TypeA, []string{"w.ns1.svc.cluster.local. 5 IN CNAME web.ns1.svc.cluster.local."}, []string{"web.ns1.svc.cluster.local. 5 IN A 10.96.0.7"}},
		{"w", dns.TypeANY, []string{"w.ns1.svc.cluster.local. 5 IN CNAME web.ns1.svc.cluster.local."}, []string{"web.ns1.svc.cluster.local. 5 IN A 10.96.0.7"}},
	} {
		r := new(dns.Msg)
		r.SetQuestion(tc.name+".ns1.svc.cluster.local.", tc.qtype)
		w := &keep{}
		if _, err := srv.ServeDNS(context.Background(), w, r); err != nil {
			t.Fatal(err)
		}
		got := w.msg.Answer
		if len(got) != len(tc.cnames)+len(tc.records) {
			t.Errorf("%s %s: %v", tc.name, dns.TypeToString[tc.qtype], got)
			continue
		}
		for i, want := range tc.cnames {
			if s := strings.ReplaceAll(got[i].String(), "\t", " "); s != want {
				t.Errorf("%s %s: answer %d is %q, want %q", tc.name, dns.TypeToString[tc.qtype], i, s, want)
			}
		}
		if rest := lines(got[len(tc.cnames):]); strings.Join(rest, "\n") != strings.Join(tc.records, "\n") {
			t.Errorf("%s %s: %q, want %q", tc.name, dns.TypeToString[tc.qtype], rest, tc.records)
		}
	}
	r := new(dns.Msg)
	r.SetQuestion("loop.ns1.svc.cluster.local.", dns.TypeA)
	w := &keep{}
	if _, err := srv.ServeDNS(context.Background(), w, r); err != nil || len(w.msg.Answer) != maxAliasHops+1 {
		t.Errorf("loop: %v, %d records, want %d", err, len(w.msg.Answer), maxAliasHops+1)
	}
}
