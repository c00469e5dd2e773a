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
	switch rnd.IntN(5) {
	case 0, 1:
		return NewVirtual(key, addrs, ports)
	case 2:
		return randomRecords(rnd, key, addrs)
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
	for n, c := range s.parents {
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

// randomRecords is a record set (the Mesos model) of addrs and a few SRV
// records, whose addresses have PTR records or not.
func randomRecords(rnd *rand.Rand, key string, addrs []netip.Addr) *Facts {
	var srvs []SRVRecord
	for range rnd.IntN(3) {
		srvs = append(srvs, SRVRecord{Target: randomKey(rnd), Port: uint16(31000 + rnd.IntN(3)), Weight: 1})
	}
	switch rnd.IntN(3) {
	case 0:
		return NewRecords(key, addrs, srvs, AllPTR)
	case 1:
		return NewRecords(key, addrs, srvs, netip.Addr.Is4)
	}
	return NewRecords(key, addrs, srvs, nil)
}

// randomKey is one of the keys the model tests change: two or three
// labels, so that record sets have parents of both depths.
func randomKey(rnd *rand.Rand) string {
	key := fmt.Sprintf("svc%d.ns%d", rnd.IntN(30), rnd.IntN(3))
	if rnd.IntN(3) == 0 {
		key += ".slave"
	}
	return key
}

// change makes one random change to key in e and m, the way the builders
// do: a removal, a new service, or an update (UpdatePTRs from the facts it
// had to its new ones, which keep some of its addresses).
func change(rnd *rand.Rand, e *Edit, m model, key string) {
	prev := e.Service(key)
	var next *Facts
	switch rnd.IntN(4) {
	case 0: // goes
	case 1: // comes anew, whatever was there
		next = randomService(rnd, key)
	default: // changes a little: most addresses stay
		next = mutate(rnd, key, prev)
	}
	if rnd.IntN(4) == 0 {
		// The older way: remove everything, add everything.
		if old := e.Remove(key); old != nil {
			e.RemovePTRs(old)
		}
		if next != nil {
			e.Put(next)
			e.AddPTRs(next)
		}
	} else {
		e.UpdatePTRs(prev, next)
		if next != nil {
			e.Put(next)
		} else if prev != nil {
			e.Remove(key)
		}
	}
	delete(m, key)
	if next != nil {
		m[key] = next
	}
}

// mutate is svc with a few changes: an address replaced, one added, a
// host renamed, an endpoint named or unnamed; a random service when svc is
// nil.
func mutate(rnd *rand.Rand, key string, svc *Facts) *Facts {
	if svc == nil || svc.kind == Alias || svc.kind == Records {
		return randomService(rnd, key)
	}
	eps := make([]EndpointFacts, len(svc.endpoints))
	for i := range svc.endpoints {
		e := &svc.endpoints[i]
		host := ""
		if e.host != 0 {
			host = svc.hosts[e.host-1]
		}
		eps[i] = NewEndpoint(e.Addr(), host, 0, e.named())
	}
	for range 1 + rnd.IntN(2) {
		i := rnd.IntN(len(eps))
		switch rnd.IntN(4) {
		case 0:
			eps[i].addr = netip.AddrFrom4([4]byte{10, 0, byte(rnd.IntN(3)), byte(rnd.IntN(40))})
		case 1:
			eps = append(eps, NewEndpoint(netip.AddrFrom16([16]byte{0xfd, 15: byte(rnd.IntN(40))}), "", 0, true))
		case 2:
			eps[i].host = fmt.Sprintf("pet-%d", rnd.IntN(5))
		default:
			eps[i].named = !eps[i].named
		}
	}
	slices.SortFunc(eps, func(a, b EndpointFacts) int { return a.addr.Compare(b.addr) })
	eps = slices.CompactFunc(eps, func(a, b EndpointFacts) bool { return a.addr == b.addr })
	ports := []SRVPort{{Name: "http", Proto: "tcp", Number: 80}}
	if svc.kind == Virtual {
		addrs := make([]netip.Addr, len(eps))
		for i, e := range eps {
			addrs[i] = e.addr
		}
		return NewVirtual(key, addrs, ports)
	}
	return NewHeadless(key, eps, ports, nil)
}

// TestEditMatchesFullBuild applies random batches of changes through Edit
// and checks after each that the snapshot equals one built from scratch,
// and that the snapshot published before it did not change:
// copy-on-write copies every shard it changes. The changes are those of
// the builders: removals, new services, and updates that keep most
// addresses and change only the PTR entries of those that came or went.
func TestEditMatchesFullBuild(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	m := model{}
	cur := m.build()
	for batch := range 400 {
		frozen := dumpSnapshot(cur)
		e := cur.Edit(cur.serial + 1)
		for range 1 + rnd.IntN(6) {
			change(rnd, e, m, randomKey(rnd))
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

// TestFreshEditMatchesFullBuild makes the same changes to a snapshot that
// is still being built (the builders' Prepare, while the cache syncs: its
// PTR shards are unsorted until Done).
func TestFreshEditMatchesFullBuild(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for run := range 100 {
		m := model{}
		e := NewEdit(1)
		for range 1 + rnd.IntN(40) {
			change(rnd, e, m, fmt.Sprintf("svc%d.ns%d", rnd.IntN(20), rnd.IntN(3)))
		}
		if got, want := dumpSnapshot(e.Done()), dumpSnapshot(m.build()); got != want {
			t.Fatalf("run %d: the snapshot built with changes differs from a full build:\ngot:\n%s\nwant:\n%s", run, got, want)
		}
	}
}
