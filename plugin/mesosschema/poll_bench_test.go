package mesosschema

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

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

// BenchmarkPollChange is the CPU of the records of a poll in which 1% or
// 10% of the running tasks changed (moved to another agent), on the M1
// shape (BenchShape) and the M2 shape (BenchShapeWorst): a full rebuild
// (generate, then Apply's diff against the published snapshot) and the
// incremental path (incremental.next, then Apply on the names it lists),
// measured in the same loop, one poll of each an iteration, so that the
// ratio is of one run on one machine's load. CPU is the process's (user
// and system, the GC's included), not wall time. Decoding, the same for
// both, is BenchmarkPollDecode. The states alternate, so that every poll
// brings a change. decode-cpu-ms/poll is decodeState's CPU on the same
// states' bodies, which a poll pays either way, and poll-ratio the whole
// poll's (decode and records) incremental to full.
//
//	go test -run '^$' -bench PollChange -benchtime 20x ./plugin/mesosschema
func BenchmarkPollChange(b *testing.B) {
	for _, shape := range []struct {
		name string
		opts mesosstatetest.GenOptions
	}{{"M1", mesosstatetest.BenchShape}, {"M2", mesosstatetest.BenchShapeWorst}} {
		for _, pct := range []int{1, 10} {
			states := []*mesosstate.State{changed(mesosstatetest.Generate(shape.opts), pct), mesosstatetest.Generate(shape.opts)}
			b.Run(fmt.Sprintf("%s/%d%%", shape.name, pct), func(b *testing.B) { benchChange(b, states) })
		}
	}
}

func benchChange(b *testing.B, states []*mesosstate.State) {
	fm, im := benchServer(b, states[1]), benchServer(b, states[1])
	fb, ib, in := &builder{m: fm}, &builder{m: im}, newIncremental(&im.gen)
	ib.offer(in.next(states[1]), testNow)
	ib.Apply()
	bodies := [][]byte{mesosstatetest.Marshal(states[0]), mesosstatetest.Marshal(states[1])}
	var full, inc, decode time.Duration
	i := 0
	for b.Loop() {
		st := states[i%2]
		decode += cpu(b, func() {
			if _, err := decodeState(bytes.NewReader(bodies[i%2])); err != nil {
				b.Fatal(err)
			}
		})
		full += cpu(b, func() {
			fb.offer(generate(st, &fm.gen, nil), testNow)
			fb.Apply()
		})
		inc += cpu(b, func() {
			g := in.next(st)
			if !g.partial {
				b.Fatal("the incremental path built the state whole")
			}
			ib.offer(g, testNow)
			ib.Apply()
		})
		i++
	}
	b.ReportMetric(float64(full.Milliseconds())/float64(i), "full-cpu-ms/poll")
	b.ReportMetric(float64(inc.Milliseconds())/float64(i), "incr-cpu-ms/poll")
	b.ReportMetric(float64(inc)/float64(full), "ratio")
	b.ReportMetric(float64(decode.Milliseconds())/float64(i), "decode-cpu-ms/poll")
	b.ReportMetric(float64(decode+inc)/float64(decode+full), "poll-ratio")
}

// cpu is the process's CPU time f takes.
func cpu(b *testing.B, f func()) time.Duration {
	before := rusage(b)
	f()
	return rusage(b) - before
}

func rusage(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// changed moves pct% of st's running tasks to the next agent.
func changed(st *mesosstate.State, pct int) *mesosstate.State {
	n := 0
	for fi := range st.Frameworks {
		for ti := range st.Frameworks[fi].Tasks {
			t := &st.Frameworks[fi].Tasks[ti]
			if !t.Running() {
				continue
			}
			if n%100 < pct {
				for ai, s := range st.Slaves {
					if s.ID == t.SlaveID {
						t.SlaveID = st.Slaves[(ai+1)%len(st.Slaves)].ID
						break
					}
				}
			}
			n++
		}
	}
	return st
}
