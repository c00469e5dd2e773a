package mesosschema

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
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

// BenchmarkPollChange is the CPU of a whole poll that brings a new state
// in which 1% or 10% of the running tasks changed (moved to another
// agent), on the M1 shape (BenchShape) and the M2 shape (BenchShapeWorst):
// the state's decoding, its records and their publication. Two paths, in
// the same loop, one poll of each an iteration, so that their ratio is of
// one run on one machine's load:
//
//   - full: the state decoded whole (mesosstate.Decode, which keeps
//     nothing between states) and its records made whole (generate, then
//     Apply's diff against the published snapshot): a poll before the
//     decoder and the incremental build;
//   - poll: the poller's path, a Decoder that takes the tasks whose text
//     is the last state's, incremental.next, and Apply on the names it
//     lists.
//
// CPU is the process's (user and system, the GC's included), not wall
// time. poll-ratio is poll to full; decode-* and build-ratio are the
// parts. answer-p50-ms is the median wall time of the poller's path, from
// the body read to the new snapshot published (the fetch not included).
// gunzip-cpu-ms/poll is the CPU of decompressing the body, which both
// paths pay when the master compresses it (and neither when the state is
// the same bytes as the last: the client skips it). The states alternate,
// so that every poll brings a change.
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

// pollCosts sums the CPU of each part of the polls of benchChange.
type pollCosts struct {
	fullDecode, fullBuild, decode, build, gunzip time.Duration
	answers                                      []time.Duration
}

func benchChange(b *testing.B, states []*mesosstate.State) {
	bodies := [][]byte{mesosstatetest.Marshal(states[0]), mesosstatetest.Marshal(states[1])}
	zipped := [][]byte{gzipped(b, bodies[0]), gzipped(b, bodies[1])}
	fm, im := benchServer(b, states[1]), benchServer(b, states[1])
	fb, ib, in, dec := &builder{m: fm}, &builder{m: im}, newIncremental(&im.gen), mesosstate.NewDecoder()
	first, err := dec.Decode(bytes.NewReader(bodies[1]))
	if err != nil {
		b.Fatal(err)
	}
	ib.offer(in.next(first), testNow)
	ib.Apply()
	var c pollCosts
	i := 0
	for b.Loop() {
		body := bodies[i%2]
		c.gunzip += cpu(b, func() { gunzip(b, zipped[i%2]) })
		var st *mesosstate.State
		c.fullDecode += cpu(b, func() { st = decodeOrFail(b, func() (*mesosstate.State, error) { return mesosstate.Decode(body) }) })
		c.fullBuild += cpu(b, func() {
			fb.offer(generate(st, &fm.gen, nil), testNow)
			fb.Apply()
		})
		start := time.Now()
		c.decode += cpu(b, func() {
			st = decodeOrFail(b, func() (*mesosstate.State, error) { return dec.Decode(bytes.NewReader(body)) })
		})
		c.build += cpu(b, func() {
			g := in.next(st)
			if !g.partial {
				b.Fatal("the incremental path built the state whole")
			}
			ib.offer(g, testNow)
			ib.Apply()
		})
		c.answers = append(c.answers, time.Since(start))
		i++
	}
	c.report(b, i)
}

func (c *pollCosts) report(b *testing.B, polls int) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(polls) }
	full, poll := c.fullDecode+c.fullBuild, c.decode+c.build
	b.ReportMetric(ms(full), "full-cpu-ms/poll")
	b.ReportMetric(ms(poll), "poll-cpu-ms/poll")
	b.ReportMetric(float64(poll)/float64(full), "poll-ratio")
	b.ReportMetric(ms(c.fullDecode), "decode-full-ms/poll")
	b.ReportMetric(ms(c.decode), "decode-ms/poll")
	b.ReportMetric(float64(c.build)/float64(c.fullBuild), "build-ratio")
	b.ReportMetric(ms(c.gunzip), "gunzip-cpu-ms/poll")
	slices.Sort(c.answers)
	b.ReportMetric(float64(c.answers[len(c.answers)/2].Microseconds())/1000, "answer-p50-ms")
}

func decodeOrFail(b *testing.B, decode func() (*mesosstate.State, error)) *mesosstate.State {
	st, err := decode()
	if err != nil {
		b.Fatal(err)
	}
	return st
}

func gzipped(b *testing.B, body []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(body); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func gunzip(b *testing.B, zipped []byte) {
	r, err := gzip.NewReader(bytes.NewReader(zipped))
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	if err != nil {
		b.Fatal(err)
	}
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
