package clusterfirst

import (
	"errors"
	"math"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// level is how hard the handler sheds.
type level int32

const (
	shedNothing level = iota // the queue delay is under target: every query is served
	shedOther                // from target to bound: UDP queries outside the cluster zones are dropped
	shedAll                  // from bound on: every UDP query is dropped
)

// The sampling. The runtime records in the histogram how long a goroutine
// (one in eight) waited runnable before it ran; a UDP query is read into a
// goroutine of its own, so this is the queue every query waits in before
// any plugin sees it.
const (
	schedLatencies = "/sched/latencies:seconds"
	samplePeriod   = 2 * time.Millisecond
	// window is the periods the delay is measured over (10 ms): long
	// enough to hold some samples at a few thousand queries a second,
	// short enough to follow a burst.
	window = 5
	// delayQuantile: the delay is the p90 of the window, so that a few
	// unlucky goroutines do not make an overload.
	delayQuantile = 0.9
)

var errNoHistogram = errors.New("the Go runtime has no " + schedLatencies + " histogram")

// sampler turns the runtime's scheduling latencies into a level, from a
// goroutine of its own: the query path only loads it.
type sampler struct {
	target, bound time.Duration
	level         atomic.Int32
	running       atomic.Bool

	// mu orders start and stop, which caddy may call from different
	// goroutines (a reload stops the old instance from its own).
	mu sync.Mutex
	// quit ends the goroutine, which closes done when it has returned;
	// both nil when it is not running.
	quit, done chan struct{}
}

func newSampler(target, bound time.Duration) *sampler {
	return &sampler{target: target, bound: bound}
}

// Level implements overload.
func (s *sampler) Level() level { return level(s.level.Load()) }

// start starts the goroutine; a second start does nothing.
func (s *sampler) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quit != nil {
		return nil
	}
	reads, err := readLatencies()
	if err != nil {
		return err
	}
	h := newHistory(reads[0].Value.Float64Histogram().Counts, window+1)
	s.quit, s.done = make(chan struct{}), make(chan struct{})
	go s.run(reads, h, s.quit, s.done)
	return nil
}

// stop ends the goroutine and waits for it; stopping a sampler that is
// not running does nothing.
func (s *sampler) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quit == nil {
		return nil
	}
	close(s.quit)
	<-s.done
	s.quit, s.done = nil, nil
	s.level.Store(int32(shedNothing))
	return nil
}

// run reads the histogram every period and publishes the level. (Under
// overload its own wake-ups wait in the queue too: the window then spans
// more time, never less.)
func (s *sampler) run(reads []metrics.Sample, h *history, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer s.running.Store(false)
	tick := time.NewTicker(samplePeriod)
	defer tick.Stop()
	s.running.Store(true)
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
		}
		metrics.Read(reads) // reuses the histogram's slices: no allocation
		hist := reads[0].Value.Float64Histogram()
		older := h.add(hist.Counts)
		delay := time.Duration(quantile(delayQuantile, older, hist.Counts, hist.Buckets) * float64(time.Second))
		l := levelOf(delay, s.target, s.bound)
		s.level.Store(int32(l))
		queueDelay.Set(delay.Seconds())
		levelGauge.Set(float64(l))
	}
}

// readLatencies reads the histogram into a sample that later reads reuse.
func readLatencies() ([]metrics.Sample, error) {
	reads := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(reads)
	if reads[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil, errNoHistogram
	}
	return reads, nil
}

// levelOf is the level for a queue delay.
func levelOf(delay, target, bound time.Duration) level {
	switch {
	case delay >= bound:
		return shedAll
	case delay >= target:
		return shedOther
	}
	return shedNothing
}

// history is a ring of the last reads of the histogram's cumulative
// counts: the difference between the newest and the oldest is what the
// last window recorded.
type history struct {
	reads [][]uint64
	next  int // the slot the next read goes to, which holds the oldest
}

// newHistory is a ring of n slots, each filled with first, so that the
// first windows count from the start.
func newHistory(first []uint64, n int) *history {
	h := &history{reads: make([][]uint64, n)}
	for i := range h.reads {
		h.reads[i] = append([]uint64(nil), first...)
	}
	return h
}

// add keeps a copy of counts in place of the oldest read, and returns the
// read n-1 periods older than counts.
func (h *history) add(counts []uint64) []uint64 {
	slot := h.reads[h.next]
	if len(slot) != len(counts) { // never, for one process's runtime
		slot = make([]uint64, len(counts))
		h.reads[h.next] = slot
	}
	copy(slot, counts)
	h.next = (h.next + 1) % len(h.reads)
	return h.reads[h.next]
}

// quantile is the q-quantile, in seconds, of what a runtime/metrics
// histogram recorded between two cumulative reads of its counts, older
// and newer (bucket i spans buckets[i] to buckets[i+1]), interpolated
// linearly inside its bucket; a bucket open at one end (-Inf, +Inf) gives
// its finite bound. 0 when nothing was recorded in between.
func quantile(q float64, older, newer []uint64, buckets []float64) float64 {
	if len(older) != len(newer) || len(buckets) != len(newer)+1 {
		return 0
	}
	var total uint64
	for i := range newer {
		total += delta(older[i], newer[i])
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var below uint64
	for i := range newer {
		n := delta(older[i], newer[i])
		if n == 0 || float64(below+n) < rank {
			below += n
			continue
		}
		lo, hi := buckets[i], buckets[i+1]
		switch {
		case math.IsInf(lo, -1) && math.IsInf(hi, 1):
			return 0
		case math.IsInf(lo, -1):
			return hi
		case math.IsInf(hi, 1):
			return lo
		}
		return lo + (hi-lo)*(rank-float64(below))/float64(n)
	}
	return 0 // not reached: rank <= total
}

// delta is what a cumulative count grew by (never negative).
func delta(older, newer uint64) uint64 {
	if newer < older {
		return 0
	}
	return newer - older
}
