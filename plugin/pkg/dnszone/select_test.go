package dnszone

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestNameTargetsMatchSrvTargets: the SRV answer of a service name built
// from the order kept with the facts equals the one built from scratch,
// for random headless services (hostnames shared by several addresses,
// dashed labels, IPv6, groups with suffixes, preferred groups).
func TestNameTargetsMatchSrvTargets(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	srv := testServer(false)
	for run := range 300 {
		groups := []Group{{}}
		if rnd.IntN(2) == 0 {
			groups = []Group{{Suffix: ".c1", Ports: []uint16{8080}}, {Suffix: ".c2", Preferred: rnd.IntN(2) == 0}, {Suffix: ""}}
		}
		var eps []EndpointFacts
		for i := range 1 + rnd.IntN(12) {
			var a netip.Addr
			if rnd.IntN(3) == 0 {
				a = netip.AddrFrom16([16]byte{0xfd, 15: byte(rnd.IntN(30))})
			} else {
				a = netip.AddrFrom4([4]byte{10, 0, 0, byte(rnd.IntN(30))})
			}
			host := ""
			switch rnd.IntN(4) {
			case 0:
				host = fmt.Sprintf("pet-%d", rnd.IntN(3))
			case 1:
				host = fmt.Sprintf("web-%d", i)
			}
			eps = append(eps, NewEndpoint(a, host, uint8(rnd.IntN(len(groups))), rnd.IntN(6) != 0))
		}
		svc := NewHeadless("db.ns1", eps, []SRVPort{{Name: "http", Proto: "tcp", Number: 80}, {Name: "pg", Proto: "tcp", Number: 5432}}, groups)
		sel := svc.nameSelection()
		if !svc.isNameSelection(sel) {
			t.Fatalf("run %d: the name selection is not recognised", run)
		}
		general := selection{idx: make([]int, sel.len())}
		for k := range sel.len() {
			general.idx[k] = sel.at(k)
		}
		if svc.isNameSelection(general) && svc.preferred == nil {
			t.Fatalf("run %d: a copy of the selection is taken for the name selection", run)
		}
		q := &Query{Qtype: dns.TypeSRV, Owner: "db.ns1.svc.cluster.local.", Lower: "db.ns1.svc.cluster.local."}
		svc.turn.Store(0)
		fast := srv.srvAnswer(q, svc, -1, q.Lower, sel, "")
		svc.turn.Store(0)
		slow := srv.srvAnswer(q, svc, -1, q.Lower, general, "")
		if got, want := fmt.Sprint(fast.Answer, fast.Extra), fmt.Sprint(slow.Answer, slow.Extra); got != want {
			t.Fatalf("run %d: from the kept order:\n%s\nfrom scratch:\n%s", run, got, want)
		}
	}
}
