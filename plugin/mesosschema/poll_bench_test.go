package mesosschema

import (
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// The CPU of a poll that brings a new state, step by step, on the
// benchmark shape (10,000 running tasks, 100 frameworks, 500 agents):
//
//	go test -run '^$' -bench Poll -benchmem ./plugin/mesosschema
//
// make bench (the M1 and M2 shapes) measures the whole server.
func BenchmarkPollDecode(b *testing.B) {
	body := mesosstatetest.Marshal(mesosstatetest.Generate(mesosstatetest.BenchShape))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := mesosstate.Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPollGenerate(b *testing.B) {
	st := mesosstatetest.Generate(mesosstatetest.BenchShape)
	m := benchServer(b, st)
	for b.Loop() {
		generate(st, &m.gen, nil)
	}
}

// BenchmarkPollApply compares the records of a state with the published
// ones when nothing changed: the diff a same-records poll costs.
func BenchmarkPollApply(b *testing.B) {
	st := mesosstatetest.Generate(mesosstatetest.BenchShape)
	m := benchServer(b, st)
	g := generate(st, &m.gen, nil)
	snap := m.Snapshot()
	for b.Loop() {
		if changed, gone := diff(snap, g.sets); len(changed)+len(gone) != 0 {
			b.Fatalf("%d changed, %d gone", len(changed), len(gone))
		}
	}
}

func benchServer(b *testing.B, st *mesosstate.State) *Mesosschema {
	m := newMesosschema()
	m.Zones, m.master.Masters = []string{"mesos."}, []string{"10.0.0.1:5050"}
	if err := m.complete(); err != nil {
		b.Fatal(err)
	}
	bl := &builder{m: m}
	bl.offer(generate(st, &m.gen, nil), testNow)
	bl.Publish()
	return m
}
