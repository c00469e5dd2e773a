package dnszone

import (
	"fmt"
	"net/netip"
	"testing"
)

// updateFixture is a snapshot of n headless services of e named endpoints
// each, with their PTR entries: S2's shape is 10,000 × 10, S4's 1,000 ×
// 100.
func updateFixture(n, e int) (*Snapshot, func(i, gen int) *Facts) {
	ports := []SRVPort{{Name: "http", Proto: "tcp", Number: 80}}
	svc := func(i, gen int) *Facts {
		eps := make([]EndpointFacts, e)
		for j := range e {
			x := i*e + j
			if j == gen%e { // one address replaced per generation
				x = 1<<23 + i*e + gen
			}
			eps[j] = NewEndpoint(netip.AddrFrom4([4]byte{10, byte(x >> 16), byte(x >> 8), byte(x)}), fmt.Sprintf("pod-%d", j), 0, true)
		}
		return NewHeadless(fmt.Sprintf("svc-%d.ns", i), eps, ports, nil)
	}
	ed := NewEdit(1)
	for i := range n {
		f := svc(i, 0)
		ed.Put(f)
		ed.AddPTRs(f)
	}
	return ed.Done(), svc
}

// BenchmarkUpdateOneService is the snapshot's cost of one EndpointSlice
// update that replaces one address of one service: the edit, the PTR
// entries, the new snapshot. The facts are built outside the timing.
//
//	go test -run '^$' -bench UpdateOneService -benchmem ./plugin/pkg/dnszone
func BenchmarkUpdateOneService(b *testing.B) {
	for _, shape := range []struct {
		name string
		n, e int
	}{{"S2-10kx10", 10000, 10}, {"S4-1kx100", 1000, 100}} {
		b.Run(shape.name, func(b *testing.B) {
			cur, svc := updateFixture(shape.n, shape.e)
			gen := 0
			next := make([]*Facts, 0, 1024)
			for b.Loop() {
				b.StopTimer()
				if len(next) == 0 {
					for k := range 1024 {
						next = append(next, svc((gen+k)%shape.n, gen+k+1))
					}
				}
				f := next[0]
				next = next[1:]
				gen++
				b.StartTimer()
				e := cur.Edit(cur.Serial() + 1)
				updateService(e, f)
				cur = e.Done()
			}
		})
	}
}

// updateService replaces a service's facts the way the builders do.
func updateService(e *Edit, f *Facts) {
	e.UpdatePTRs(e.Service(f.key), f)
	e.Put(f)
}
