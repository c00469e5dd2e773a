package clusterfirst

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

var inf = math.Inf(1)

func TestQuantile(t *testing.T) {
	// Buckets of 1 ms from 0 to 4 ms, open below and above, as
	// runtime/metrics makes them: counts[0] is below 0, counts[5] from 4 ms.
	buckets := []float64{-inf, 0, 0.001, 0.002, 0.003, 0.004, inf}
	tests := []struct {
		name         string
		q            float64
		older, newer []uint64
		buckets      []float64
		want         float64
	}{
		{name: "nothing recorded", q: 0.9, older: []uint64{0, 5, 5, 0, 0, 0}, newer: []uint64{0, 5, 5, 0, 0, 0}, buckets: buckets, want: 0},
		{name: "all zero", q: 0.9, older: make([]uint64, 6), newer: make([]uint64, 6), buckets: buckets, want: 0},
		// 10 latencies in [1 ms, 2 ms): the 9th of 10 is 0.9 of the way up.
		{name: "one bucket", q: 0.9, older: []uint64{0, 0, 0, 0, 0, 0}, newer: []uint64{0, 0, 10, 0, 0, 0}, buckets: buckets, want: 0.0019},
		// Only the window's growth counts: 100 old latencies at 0-1 ms are gone.
		{name: "delta only", q: 0.9, older: []uint64{0, 100, 0, 0, 0, 0}, newer: []uint64{0, 100, 10, 0, 0, 0}, buckets: buckets, want: 0.0019},
		// 9 fast, 1 slow: the 9th is the last of the fast bucket.
		{name: "rank at a bucket's end", q: 0.9, older: make([]uint64, 6), newer: []uint64{0, 9, 0, 0, 1, 0}, buckets: buckets, want: 0.001},
		// 8 fast, 2 slow: the 9th is halfway into the slow bucket.
		{name: "rank inside a later bucket", q: 0.9, older: make([]uint64, 6), newer: []uint64{0, 8, 0, 0, 2, 0}, buckets: buckets, want: 0.0035},
		{name: "median", q: 0.5, older: make([]uint64, 6), newer: []uint64{0, 2, 2, 2, 2, 2}, buckets: buckets, want: 0.0025},
		{name: "empty buckets skipped", q: 0.9, older: []uint64{0, 3, 0, 0, 0, 0}, newer: []uint64{0, 3, 0, 4, 0, 0}, buckets: buckets, want: 0.0029},
		// The open buckets give their finite bound.
		{name: "+Inf bucket", q: 0.9, older: make([]uint64, 6), newer: []uint64{0, 1, 0, 0, 0, 9}, buckets: buckets, want: 0.004},
		{name: "-Inf bucket", q: 0.9, older: make([]uint64, 6), newer: []uint64{10, 0, 0, 0, 0, 0}, buckets: buckets, want: 0},
		{name: "-Inf bucket with a finite top", q: 0.5, older: []uint64{0, 0}, newer: []uint64{4, 0}, buckets: []float64{-inf, 0.5, inf}, want: 0.5},
		{name: "one bucket, open both ways", q: 0.9, older: []uint64{0}, newer: []uint64{7}, buckets: []float64{-inf, inf}, want: 0},
		{name: "one sample", q: 0.9, older: make([]uint64, 6), newer: []uint64{0, 0, 0, 1, 0, 0}, buckets: buckets, want: 0.0029},
		// A count that fell (not possible in one process) counts as none.
		{name: "count fell", q: 0.9, older: []uint64{0, 5, 0, 0, 0, 0}, newer: []uint64{0, 0, 0, 10, 0, 0}, buckets: buckets, want: 0.0029},
		{name: "lengths differ", q: 0.9, older: []uint64{0, 0}, newer: []uint64{0, 0, 10, 0, 0, 0}, buckets: buckets, want: 0},
		{name: "too few boundaries", q: 0.9, older: make([]uint64, 6), newer: []uint64{0, 0, 10, 0, 0, 0}, buckets: buckets[:6], want: 0},
	}
	for _, tc := range tests {
		got := quantile(tc.q, tc.older, tc.newer, tc.buckets)
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
}

// TestQuantileRuntimeBuckets: the runtime's own boundaries, -Inf, 0 and
// then exponential with sub-buckets, up to +Inf.
func TestQuantileRuntimeBuckets(t *testing.T) {
	reads, err := readLatencies()
	if err != nil {
		t.Fatal(err)
	}
	hist := reads[0].Value.Float64Histogram()
	b := hist.Buckets
	if !math.IsInf(b[0], -1) || !math.IsInf(b[len(b)-1], 1) {
		t.Fatalf("the runtime's buckets run from %g to %g: the tests assume -Inf to +Inf", b[0], b[len(b)-1])
	}
	older := make([]uint64, len(hist.Counts))
	newer := make([]uint64, len(hist.Counts))
	// 100 latencies in the bucket that holds 6 ms.
	i, _ := slices.BinarySearch(b, 0.006)
	i-- // the bucket whose lower bound is at most 6 ms
	newer[i] = 100
	got := quantile(delayQuantile, older, newer, b)
	if got < b[i] || got >= b[i+1] || got < 0.005 || got > 0.007 {
		t.Errorf("p90 %g, want in [%g, %g)", got, b[i], b[i+1])
	}
}

// TestWindowDelay: a window with fewer than minSamples waits is no delay,
// however long they were.
func TestWindowDelay(t *testing.T) {
	buckets := []float64{-inf, 0, 0.001, 0.002, 0.003, 0.004, inf}
	older := make([]uint64, 6)
	few := []uint64{0, 0, 0, 0, minSamples - 1, 0}
	if d := windowDelay(older, few, buckets); d != 0 {
		t.Errorf("%d waits of 3-4 ms: delay %v, want 0", minSamples-1, d)
	}
	enough := []uint64{0, 0, 0, 0, minSamples, 0}
	if d := windowDelay(older, enough, buckets); d < 3*time.Millisecond || d > 4*time.Millisecond {
		t.Errorf("%d waits of 3-4 ms: delay %v, want 3-4 ms", minSamples, d)
	}
}

func TestNextProbability(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name                 string
		p                    float64
		delay, previous, ref time.Duration
		want                 float64
	}{
		{"at the reference, steady", 0.3, 5 * ms, 5 * ms, 5 * ms, 0.3},
		{"twice the reference, steady", 0.3, 10 * ms, 10 * ms, 5 * ms, 0.4},
		{"empty queue, steady", 0.3, 0, 0, 5 * ms, 0.2},
		{"a jump to twice the reference", 0, 10 * ms, 0, 5 * ms, 0.6}, // 0.1·1 + 0.25·2
		{"falling fast", 0.5, 5 * ms, 15 * ms, 5 * ms, 0},
		{"capped at 1", 0.95, 50 * ms, 50 * ms, 5 * ms, 1},
		{"never below 0", 0, 0, 0, 5 * ms, 0},
	} {
		if got := nextProbability(tc.p, tc.delay, tc.previous, tc.ref); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
}

// standingPeriods is how many periods a queue must stand before shedding.
const standingPeriods = int(standing / samplePeriod)

// TestControllerPriority: nothing is shed until the queue has stood for
// the standing interval; cluster names are shed only once every other
// name is, and the odds fall back to none when the queue empties.
func TestControllerPriority(t *testing.T) {
	t.Run("a queue shorter than the standing interval sheds nothing", func(t *testing.T) {
		c := &controller{target: 5 * time.Millisecond, bound: 10 * time.Millisecond}
		for range 3 {
			for range standingPeriods - 1 {
				if sh := c.step(reading{delay: 50 * time.Millisecond}, true, samplePeriod); sh != 0 {
					t.Fatalf("odds %x before the queue stood %v", sh, standing)
				}
			}
			c.step(reading{}, true, samplePeriod) // the queue empties: the interval starts again
		}
	})
	ms := time.Millisecond
	c := &controller{target: 5 * ms, bound: 10 * ms}
	var sh shedding
	for range standingPeriods - 1 {
		if sh = c.step(reading{delay: 30 * ms}, true, samplePeriod); sh != 0 {
			t.Fatalf("odds %x before the queue stood %v", sh, standing)
		}
	}
	for range 3 {
		sh = c.step(reading{delay: 12 * ms}, true, samplePeriod) // past the bound, but other names not all shed yet
	}
	if sh.cluster() != 0 && c.other < 1 {
		t.Fatalf("cluster odds %g while other odds %g", c.cluster, c.other)
	}
	for range 20 {
		sh = c.step(reading{delay: 30 * ms}, true, samplePeriod)
	}
	if sh.other() != math.MaxUint32 || sh.cluster() == 0 {
		t.Fatalf("at 30 ms for 40 ms: other %d, cluster %d; want all other names shed and some cluster names", sh.other(), sh.cluster())
	}
	for range 20 {
		sh = c.step(reading{}, true, samplePeriod)
	}
	if sh != 0 {
		t.Fatalf("after 40 ms of an empty queue: other %g, cluster %g, want none", c.other, c.cluster)
	}
}

// TestControllerCPUGate: a queue that stands while the process does not use
// the CPU it may (a neighbour on its core, throttling, a stop, the
// collector's idle workers) sheds nothing, however long; the gate closing
// mid-episode stops shedding at once and ends the episode.
func TestControllerCPUGate(t *testing.T) {
	ms := time.Millisecond
	c := &controller{target: ms, bound: 3 * ms}
	for range 10 * standingPeriods {
		if sh := c.step(reading{delay: 40 * ms}, false, samplePeriod); sh != 0 {
			t.Fatalf("odds %x with the CPU gate shut", sh)
		}
	}
	for range standingPeriods + 5 {
		c.step(reading{delay: 40 * ms}, true, samplePeriod)
	}
	if !c.episode || c.other == 0 {
		t.Fatalf("a queue standing %v with the process busy: episode %v, other odds %g; want shedding", standing, c.episode, c.other)
	}
	if sh := c.step(reading{delay: 40 * ms}, false, samplePeriod); sh != 0 || c.episode {
		t.Fatalf("gate shut mid-episode: odds %x, episode %v; want none and the episode over", sh, c.episode)
	}
	if sh := c.step(reading{delay: 40 * ms}, true, samplePeriod); sh != 0 {
		t.Fatalf("gate open again: odds %x at once, want a new standing interval first", sh)
	}
}

// TestControllerEpisode: within an episode shedding resumes as soon as the
// delay is over target, without a new standing interval; the episode ends
// once nothing has been shed for calm, and then the interval applies again.
func TestControllerEpisode(t *testing.T) {
	ms := time.Millisecond
	c := &controller{target: ms, bound: 3 * ms}
	for range standingPeriods + 5 {
		c.step(reading{delay: 5 * ms}, true, samplePeriod)
	}
	for range 50 { // 100 ms of an empty queue: odds back to 0, still in the episode
		c.step(reading{}, true, samplePeriod)
	}
	if c.other != 0 || !c.episode {
		t.Fatalf("after 100 ms of an empty queue: other %g, episode %v; want 0 within the episode", c.other, c.episode)
	}
	if sh := c.step(reading{delay: 5 * ms}, true, samplePeriod); sh.other() == 0 {
		t.Fatal("delay over target within an episode: nothing shed, want shedding at once")
	}
	for range int(calm/samplePeriod) + 50 {
		c.step(reading{}, true, samplePeriod)
	}
	if c.episode {
		t.Fatalf("after %v without a drop the episode goes on", calm)
	}
	if sh := c.step(reading{delay: 5 * ms}, true, samplePeriod); sh != 0 {
		t.Fatalf("after the episode: odds %x at once, want a new standing interval first", sh)
	}
}

func TestHistory(t *testing.T) {
	h := newHistory([]uint64{1, 1}, 3)
	reads := [][]uint64{{2, 1}, {3, 1}, {4, 5}, {5, 9}}
	// The oldest returned is two reads before the newest; before that, the first.
	want := [][]uint64{{1, 1}, {1, 1}, {2, 1}, {3, 1}}
	for i, r := range reads {
		if got := h.add(r); !slices.Equal(got, want[i]) {
			t.Errorf("read %d: oldest %v, want %v", i, got, want[i])
		}
	}
	r := []uint64{6, 9}
	h.add(r)
	r[0] = 100 // the ring keeps a copy
	if got := h.add([]uint64{7, 9}); !slices.Equal(got, []uint64{5, 9}) {
		t.Errorf("oldest %v, want [5 9]", got)
	}
}

// TestSamplerStartStop: the goroutine runs between start and stop, is
// gone after stop, and a restart runs a new one; stop without start and a
// second start are harmless.
func TestSamplerStartStop(t *testing.T) {
	before := runtime.NumGoroutine()
	cf := &Clusterfirst{sampler: newSampler(defaultTarget, defaultBound)}
	if err := cf.sampler.stop(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := cf.sampler.start(); err != nil {
			t.Fatal(err)
		}
		if err := cf.sampler.start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ready", cf.Ready)
		if n := runtime.NumGoroutine(); n > before+1 {
			t.Errorf("%d goroutines running, want at most %d: one sampler", n, before+1)
		}
		done := cf.sampler.done
		if err := cf.sampler.stop(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		default:
			t.Fatal("stop returned before the goroutine")
		}
		if cf.Ready() || cf.sampler.Shedding() != 0 {
			t.Errorf("stopped: ready %v, odds %x", cf.Ready(), cf.sampler.Shedding())
		}
	}
	waitFor(t, "the goroutines to settle", func() bool { return runtime.NumGoroutine() <= before })
}

// TestSamplerStopRacesStart: start and stop from different goroutines.
func TestSamplerStopRacesStart(t *testing.T) {
	s := newSampler(defaultTarget, defaultBound)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { s.start() })
		wg.Go(func() { s.stop() })
	}
	wg.Wait()
	s.stop()
	if s.quit != nil || s.running.Load() {
		t.Error("still running after the last stop")
	}
}

// busyMeter is a CPU meter that reads the process as using all the CPU it
// may: the machine running the tests is shared, and whether this process
// gets a whole core is not this test's question (TestControllerCPUGate's).
func busyMeter() *cpuMeter {
	m := newCPUMeter()
	begin := time.Now()
	m.readAllowed = func() float64 { return 1 }
	m.readCPU = func() (time.Duration, error) { return time.Since(begin), nil }
	return m
}

// TestSamplerSeesOverload: with one P and more work runnable than it
// serves, goroutines wait in the run queue and the odds climb until every
// name is shed (cluster ones included); once the work stops they fall back
// to none.
func TestSamplerSeesOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the scheduler for a second")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := newSampler(defaultTarget, defaultBound)
	s.meter = busyMeter()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	// 400 goroutines that each run 50 µs and yield: each waits behind
	// the other 399, some 20 ms, for its turn; 20,000 schedulings a
	// second, of which the runtime records one in eight: past minSamples
	// in every window.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 400 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for start := time.Now(); time.Since(start) < 50*time.Microsecond; {
				}
				runtime.Gosched()
			}
		})
	}
	waitFor(t, "every name shed", func() bool { return s.Shedding() == sheddingOf(1, 1) })
	close(stop)
	wg.Wait()
	waitFor(t, "no name shed", func() bool { return s.Shedding() == 0 })
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
