package dnszone

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// model is the state a sequence of edits should reach: services by key.
type model map[string]*Facts

// randomService is a virtual or headless service of a few endpoints, from
// a small address space so that services share addresses (PTR records of
// several services for one address).
func randomService(rnd *rand.Rand, key string) *Facts {
	n := 1 + rnd.IntN(6)
	addrs := make([]netip.Addr, 0, n)
	for range n {
		if rnd.IntN(4) == 0 {
			addrs = append(addrs, netip.AddrFrom16([16]byte{0xfd, 15: byte(rnd.IntN(40))}))
		} else {
			addrs = append(addrs, netip.AddrFrom4([4]byte{10, 0, byte(rnd.IntN(3)), byte(rnd.IntN(40))}))
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	ports := []SRVPort{{Name: "http", Proto: "tcp", Number: 80}}
	if rnd.IntN(2) == 0 {
		return NewVirtual(key, addrs, ports)
	}
	eps := make([]EndpointFacts, len(addrs))
	for i, a := range addrs {
		host := ""
		if rnd.IntN(3) == 0 {
			host = fmt.Sprintf("pet-%d", i)
		}
		eps[i] = NewEndpoint(a, host, 0, rnd.IntN(8) != 0)
	}
	return NewHeadless(key, eps, ports, nil)
}

// dumpSnapshot writes everything s answers with, in a stable order.
func dumpSnapshot(s *Snapshot) string {
	srv := &Server{Zones: []string{"cluster.local."}, TTL: 5}
	var lines []string
	for _, svc := range s.Services() {
		for _, rr := range srv.Records(svc, "cluster.local.") {
			lines = append(lines, rr.String())
		}
	}
	s.PTRs("cluster.local.", func(addr netip.Addr, target string) { lines = append(lines, "PTR "+addr.String()+" "+target) })
	var ns []string
	for n, c := range s.namespaces {
		ns = append(ns, fmt.Sprintf("ns %s %d", n, c))
	}
	slices.Sort(ns)
	lines = append(lines, ns...)
	lines = append(lines, fmt.Sprintf("total %d", s.total))
	return strings.Join(lines, "\n")
}

// build makes a snapshot of m from scratch.
func (m model) build() *Snapshot {
	e := NewEdit(1)
	for _, svc := range m {
		e.Put(svc)
		e.AddPTRs(svc)
	}
	return e.Done()
}

// TestEditMatchesFullBuild applies random batches of puts and removes
// through Edit and checks after each that the snapshot equals one built
// from scratch, and that the snapshot published before it did not change:
// copy-on-write copies every shard it changes.
func TestEditMatchesFullBuild(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	m := model{}
	cur := m.build()
	for batch := range 200 {
		frozen := dumpSnapshot(cur)
		e := cur.Edit(cur.serial + 1)
		for range 1 + rnd.IntN(6) {
			key := fmt.Sprintf("svc%d.ns%d", rnd.IntN(30), rnd.IntN(3))
			if old := e.Remove(key); old != nil {
				e.RemovePTRs(old)
			}
			delete(m, key)
			if rnd.IntN(3) != 0 {
				svc := randomService(rnd, key)
				e.Put(svc)
				e.AddPTRs(svc)
				m[key] = svc
			}
		}
		next := e.Done()
		if got := dumpSnapshot(cur); got != frozen {
			t.Fatalf("batch %d changed the snapshot published before it", batch)
		}
		if got, want := dumpSnapshot(next), dumpSnapshot(m.build()); got != want {
			t.Fatalf("batch %d: the edited snapshot differs from a full build:\ngot:\n%s\nwant:\n%s", batch, got, want)
		}
		cur = next
	}
}

// TestHostEndpoints: a host name matches the endpoints named so (a
// hostname, or the dashed address of one without), in its group.
func TestHostEndpoints(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	svc := NewHeadless("db.ns1", []EndpointFacts{
		NewEndpoint(a("10.0.0.2"), "", 1, true),
		NewEndpoint(a("10.0.0.1"), "pet-0", 0, true),
		NewEndpoint(a("fd00::1"), "pet-0", 0, true),
		NewEndpoint(a("10.0.0.3"), "", 0, false),
	}, nil, []Group{{Suffix: ".a"}, {Suffix: ".b"}})
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"pet-0.a", []string{"10.0.0.1", "fd00::1"}},
		{"pet-0.b", nil},
		{"10-0-0-2.b", []string{"10.0.0.2"}},
		{"10-0-0-2.a", nil},
		{"10-0-0-3.a", nil}, // unnamed
		{"010-0-0-2.b", nil},
		{"pet-0", nil},
	} {
		var got []string
		for _, i := range svc.hostEndpoints(tc.prefix) {
			got = append(got, svc.endpoints[i].Addr().String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

// TestCountTargets: SRV targets are the distinct host names, an explicit
// hostname that spells another endpoint's address included.
func TestCountTargets(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	for _, tc := range []struct {
		eps  []EndpointFacts
		want int
	}{
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "", 0, true), NewEndpoint(a("10.0.0.2"), "", 0, true)}, 2},
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "pet-0", 0, true), NewEndpoint(a("fd00::1"), "pet-0", 0, true)}, 1},
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "", 0, true), NewEndpoint(a("10.0.0.2"), "10-0-0-1", 0, true)}, 1},
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "", 0, false), NewEndpoint(a("10.0.0.2"), "pet-1", 0, true)}, 1},
	} {
		svc := NewHeadless("db.ns1", tc.eps, nil, nil)
		if listed := len(svc.srvTargets(all(svc))); listed != tc.want {
			t.Errorf("%v: listed %d targets, want %d", tc.eps, listed, tc.want)
		}
	}
}
