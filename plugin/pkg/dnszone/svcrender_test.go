package dnszone

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

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

// BenchmarkHeadlessSRV is the SRV answer of a headless service name of
// ten endpoints, with StatefulSet hostnames and without (dashed labels).
//
//	go test -run '^$' -bench HeadlessSRV -benchmem ./plugin/pkg/dnszone
func BenchmarkHeadlessSRV(b *testing.B) {
	for _, named := range []bool{true, false} {
		b.Run(fmt.Sprintf("hostnames=%v", named), func(b *testing.B) {
			eps := make([]EndpointFacts, 10)
			for i := range eps {
				host := ""
				if named {
					host = fmt.Sprintf("db-%d", i)
				}
				eps[i] = NewEndpoint(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), host, 0, true)
			}
			svc := NewHeadless("db.ns1", eps, []SRVPort{{Name: "pg", Proto: "tcp", Number: 5432}}, nil)
			srv := testServer(false, svc)
			q := &Query{Snap: srv.Snapshot(), Qtype: dns.TypeSRV, Owner: "db.ns1.svc.cluster.local.", Lower: "db.ns1.svc.cluster.local."}
			b.ReportAllocs()
			for b.Loop() {
				srv.srvAnswer(q, svc, -1, q.Lower, svc.nameSelection(), "")
			}
		})
	}
}
