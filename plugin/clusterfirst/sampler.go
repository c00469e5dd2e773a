package clusterfirst

import (
	"errors"
	"math"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// shedding is what the handler reads: the probability that a UDP query
// outside the cluster zones is dropped (the high half) and that one inside
// them is (the low half), each scaled to [0, math.MaxUint32]. One word, so
// that an unloaded query costs one atomic load and a compare with 0.
type shedding uint64

func (s shedding) other() uint32   { return uint32(s >> 32) }
func (s shedding) cluster() uint32 { return uint32(s) }

// sheddingOf packs the two probabilities.
func sheddingOf(other, cluster float64) shedding {
	return shedding(scaled(other))<<32 | shedding(scaled(cluster))
}

// scaled is a probability in [0, 1] as a fraction of math.MaxUint32.
func scaled(p float64) uint32 { return uint32(min(max(p, 0), 1) * math.MaxUint32) }

// The controller: every period each probability moves by gain times how
// far the queue delay is past its reference (target for other names, bound
// for cluster names), in units of the reference, and by trendGain times how
// much the delay moved since the last period: proportional and derivative,
// as PIE (RFC 8033) steers its drop probability. At twice the reference it
// reaches 1 within 20 ms; once the queue is empty it falls to 0 as fast.
const (
	gain      = 0.1
	trendGain = 0.25
)

// nextProbability is p after one period at delay (previous a period ago)
// against the reference delay ref.
func nextProbability(p float64, delay, previous, ref time.Duration) float64 {
	p += gain*float64(delay-ref)/float64(ref) + trendGain*float64(delay-previous)/float64(ref)
	return min(max(p, 0), 1)
}

// standing is how long the queue delay must stay over target, the process
// busy all the while, before anything is shed: CoDel's interval (RFC
// 8289), long enough to tell a queue that stands from a collection cycle
// or a burst of queries that the CPU drains by itself (a query dropped
// then costs its client a resolver timeout, seconds, for nothing).
const standing = 100 * time.Millisecond

// calm is how long the probabilities must stay 0 for a shedding episode to
// end. Within an episode shedding resumes as soon as the delay is over
// target again, without a new standing wait: under an overload that goes
// on, the controller's probabilities touch 0 now and then, and a queue let
// grow for another 100 ms each time would make every answer late.
const calm = time.Second

// controller holds the probabilities between periods.
type controller struct {
	target, bound  time.Duration
	other, cluster float64
	previous       time.Duration
	previousFill   float64
	// over is how long the delay has stood over target without a break.
	over time.Duration
	// episode: shedding began and the probabilities have not stayed 0
	// for calm since; quiet is how long they have been 0 in it.
	episode bool
	quiet   time.Duration
}

// reading is what a period measured: the run queue's delay over the last
// window and, where the listeners were read (sockets), the fill of the
// fullest one's receive queue.
type reading struct {
	delay    time.Duration
	fill     float64
	sockets  bool
	overflow bool // a listener overflowed, the drop filter off
}

// step moves the probabilities for a period's reading; busy says whether
// the process used the CPU it may (the CPU gate), and elapsed is the time
// since the last step: a period, or more when the sampler itself waited
// to run (under overload it does). Nothing is shed while the process is
// not busy, nor until the delay has stood over target for standing (or a
// listener overflowed, which proves it stood). Cluster names are shed only
// once every other name is, and other names stay all shed while any
// cluster name is: that is the priority.
func (c *controller) step(r reading, busy bool, elapsed time.Duration) shedding {
	defer func() { c.previous, c.previousFill = r.delay, r.fill }()
	if !busy {
		c.reset()
		return 0
	}
	switch {
	case r.overflow:
		// A listener's buffer filled up and overflowed: the queue stood
		// for as long as filling it took.
		c.over = max(c.over+elapsed, standing)
	case r.delay >= c.target:
		c.over += elapsed
	default:
		c.over = 0
	}
	if !c.episode && c.over < standing {
		return 0
	}
	c.episode = true
	if c.other >= 1 || c.cluster > 0 {
		c.cluster = c.nextCluster(r)
	}
	c.other = clamp(nextProbability(c.other, r.delay, c.previous, c.target) + socketPush(r.fill))
	if r.overflow {
		// The kernel is dropping at random already: other names go first.
		c.other = clamp(c.other + overflowPush)
	}
	if c.cluster > 0 {
		c.other = 1
	}
	if c.other > 0 {
		c.quiet = 0
	} else if c.quiet += elapsed; c.quiet >= calm {
		c.reset()
	}
	return sheddingOf(c.other, c.cluster)
}

// nextCluster is the cluster names' probability after a period. Where the
// listeners are read, their drops are the kernel's (socket.go), and the
// queue that stands is the listeners': the probability follows its fill,
// as PIE follows a queue (proportional and derivative), so that the
// queue stays near fillBound, never empty (an idle server is lost
// answers) nor full. Elsewhere it follows the run queue's delay past the
// bound.
func (c *controller) nextCluster(r reading) float64 {
	if !r.sockets {
		return clamp(nextProbability(c.cluster, r.delay, c.previous, c.bound))
	}
	return clamp(c.cluster + fillGain*fillError(r.fill) + fillTrendGain*(r.fill-c.previousFill)/fillBound)
}

// fillError is how far the fill is from fillBound, as a share of the way
// to empty or to full: from -1 to 1, so that the probability falls as
// fast when the queue empties as it climbs when the queue fills (an empty
// queue is an idle server's lost answers; a full one, late answers).
func fillError(fill float64) float64 {
	if fill < fillBound {
		return (fill - fillBound) / fillBound
	}
	return (fill - fillBound) / (1 - fillBound)
}

func clamp(p float64) float64 { return min(max(p, 0), 1) }

// socketPush is how far a fill over fillTarget pushes the other names'
// probability up within an episode (only up: the run queue's delay brings
// it down), by socketGain a period for each fillTarget it is over.
func socketPush(fill float64) float64 {
	return socketGain * max(fill-fillTarget, 0) / fillTarget
}

// The listeners' queues steer the probabilities too. Within an episode,
// a fill over a tenth of the buffer pushes the other names' probability
// up (socketPush), and an overflow by overflowPush a period: the run
// queue's delay cannot see that part of the wait (with the run queue kept
// short, the runtime leaves the socket unread until it has nothing else
// to run). But a fill does not begin an episode: a server near its
// capacity reads its socket in bursts, a tenth of the buffer and more, and
// still answers within milliseconds (make overload at half its
// saturation: episodes begun on a fill over a tenth dropped 490 queries
// that the server without clusterfirst answered, p99 10 ms). The cluster
// names' probability follows the fill around fillBound (fillGain,
// fillTrendGain) once every other name is dropped: a fifth of the default
// buffer is about 3 ms of a core's work.
const (
	fillTarget    = 0.1
	socketGain    = 0.02
	overflowPush  = 0.1
	fillBound     = 0.2
	fillGain      = 0.01
	fillTrendGain = 0.05
)

// reset ends an episode: nothing is shed until a queue stands again.
func (c *controller) reset() {
	c.other, c.cluster, c.over, c.quiet, c.episode = 0, 0, 0, 0, false
}

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

// sampler turns the runtime's scheduling latencies into drop
// probabilities, from a goroutine of its own: the query path only loads
// them.
type sampler struct {
	target, bound time.Duration
	shedding      atomic.Uint64
	running       atomic.Bool
	// episode is the controller's: an episode is under way.
	episode atomic.Bool

	// mu orders start and stop, which caddy may call from different
	// goroutines (a reload stops the old instance from its own).
	mu sync.Mutex
	// quit ends the goroutine, which closes done when it has returned;
	// both nil when it is not running.
	quit, done chan struct{}

	// dropsOther and dropsCluster count an episode's drops for its log line.
	dropsOther, dropsCluster atomic.Uint64
	// dropsKernel counts the datagrams the listeners dropped while the
	// filter was on, for the same line (only the sampler's goroutine
	// writes it).
	dropsKernel uint64
	// meter replaces the process's CPU meter in tests.
	meter *cpuMeter
	// port is the server's: its listeners' queues are read (0: none).
	port uint16
	// zones are the cluster zones, for the listeners' filter.
	zones []string
}

func newSampler(target, bound time.Duration) *sampler {
	return &sampler{target: target, bound: bound}
}

// Shedding implements overload.
func (s *sampler) Shedding() shedding { return shedding(s.shedding.Load()) }

// overloaded implements overload.
func (s *sampler) overloaded() bool { return s.episode.Load() }

// dropped implements overload: it counts a drop for the episode's log line.
func (s *sampler) dropped(cluster bool) {
	if cluster {
		s.dropsCluster.Add(1)
	} else {
		s.dropsOther.Add(1)
	}
}

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
	s.shedding.Store(0)
	s.episode.Store(false)
	return nil
}

// run reads the histogram and the CPU clock every period and publishes the
// probabilities. (Under overload its own wake-ups wait in the queue too:
// the window then spans more time, never less.)
func (s *sampler) run(reads []metrics.Sample, h *history, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer s.running.Store(false)
	tick := time.NewTicker(samplePeriod)
	defer tick.Stop()
	ctl := &controller{target: s.target, bound: s.bound}
	cpu := s.newMeter()
	queues := newUDPQueues(s.port, s.zones)
	defer queues.unfilter()
	var ep episode
	var sock socketSignal
	begin := time.Now()
	var last time.Duration
	s.running.Store(true)
	for {
		select {
		case <-quit:
			ep.end(s, time.Since(begin))
			return
		case <-tick.C:
		}
		now := time.Since(begin) // monotonic
		metrics.Read(reads)      // reuses the histogram's slices: no allocation
		hist := reads[0].Value.Float64Histogram()
		older := h.add(hist.Counts)
		delay := windowDelay(older, hist.Counts, hist.Buckets)
		qr := queues.read(now)
		sock.follow(qr, queues.filtering(), now)
		if queues.filtering() {
			s.dropsKernel += qr.dropped
		}
		busy, recent := cpu.busy(now)
		gate := busy >= busyOpen || (sock.overflowed(now) && recent >= busyOpen) ||
			(ctl.episode && max(busy, recent) >= busyHold)
		sh := ctl.step(reading{delay: delay, fill: qr.fill, sockets: qr.listeners > 0, overflow: sock.overflow(now)}, gate, now-last)
		last = now
		// The drops are the kernel's where a filter is on every listener:
		// all of them when it tells the names apart, else the cluster
		// names' past the bound; the rest are the handler's.
		if kernel, classifies := queues.filter(ctl.cluster, ctl.other, ctl.episode, now); kernel && classifies {
			sh = 0
		} else if kernel {
			sh = sheddingOf(ctl.other, 0)
		}
		s.shedding.Store(uint64(sh))
		s.episode.Store(ctl.episode)
		ep.follow(s, ctl, now, delay, busy, cpu.allowed)
		queueDelay.Set(delay.Seconds())
		cpuBusy.Set(busy)
		dropProbability.WithLabelValues(classOther).Set(ctl.other)
		dropProbability.WithLabelValues(classCluster).Set(ctl.cluster)
	}
}

// socketSignal remembers the listeners' overflows.
type socketSignal struct {
	// since is when the current run of readings that each found new
	// drops (with no filter on: its drops are shedding's) began;
	// overflowing, whether there is such a run.
	since       time.Duration
	overflowing bool
	// lastAt is when the last sustained overflow was seen.
	lastAt    time.Duration
	sustained bool
}

// sustainedOverflow is how long a listener must go on overflowing, at
// every reading, to count: a real overload overflows it without a break,
// where a collection's pause or a stop leaves one reading of drops and a
// queue the server then drains (make overload at half the saturation
// rate: counting every overflow, episodes began at those and dropped 134
// queries that the server without clusterfirst answered).
const sustainedOverflow = 20 * time.Millisecond

// follow takes a reading, counting its drops by cause.
func (ss *socketSignal) follow(r queueReading, filtering bool, now time.Duration) {
	if r.dropped == 0 || filtering {
		ss.overflowing = false
		if r.dropped > 0 {
			listenerDropsShed.Add(float64(r.dropped))
		}
		return
	}
	listenerDropsOverflow.Add(float64(r.dropped))
	if !ss.overflowing {
		ss.since, ss.overflowing = now, true
	}
	if now-ss.since >= sustainedOverflow {
		ss.lastAt, ss.sustained = now, true
	}
}

// overflow tells whether a listener has overflowed without a break for
// sustainedOverflow, up to now.
func (ss *socketSignal) overflow(now time.Duration) bool {
	return ss.sustained && ss.lastAt == now
}

// overflowed tells whether a sustained overflow was seen in the last
// standing.
func (ss *socketSignal) overflowed(now time.Duration) bool {
	return ss.sustained && now-ss.lastAt < standing
}

// newMeter is the CPU gate's meter: the test's, or one of the process.
func (s *sampler) newMeter() *cpuMeter {
	if s.meter != nil {
		return s.meter
	}
	return newCPUMeter()
}

// episode follows a shedding episode for the log: a line when it begins,
// with what opened it, and one when it ends, with what it dropped, so that
// a burst too short for an alert's rate still shows.
type episode struct {
	on         bool
	began      time.Duration
	worstDelay time.Duration
}

// follow notes the controller's state after a period.
func (ep *episode) follow(s *sampler, ctl *controller, now, delay time.Duration, busy, allowed float64) {
	switch {
	case ctl.episode && !ep.on:
		*ep = episode{on: true, began: now, worstDelay: delay}
		episodes.Inc()
		log.Infof("shedding: queries waited %v to run for over %v while the process used %.0f%% of the %.2g CPU it may use",
			delay.Round(10*time.Microsecond), standing, 100*busy, allowed)
	case ep.on && ctl.episode:
		ep.worstDelay = max(ep.worstDelay, delay)
	case ep.on:
		ep.end(s, now)
	}
}

// end logs the end of an episode under way, with the drops it counted.
func (ep *episode) end(s *sampler, now time.Duration) {
	if !ep.on {
		return
	}
	ep.on = false
	other, cluster := s.dropsOther.Swap(0), s.dropsCluster.Swap(0)
	kernel := s.dropsKernel
	s.dropsKernel = 0
	log.Infof("stopped shedding after %v: dropped %d UDP queries (%d in the cluster zones, %d other), and the kernel %d more at the listeners; the longest wait to run was %v",
		(now - ep.began).Round(time.Millisecond), other+cluster, cluster, other, kernel, ep.worstDelay.Round(10*time.Microsecond))
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

// minSamples is the fewest waits a window must have recorded to count: the
// runtime records one scheduling in eight, so fewer than 10 in 10 ms is
// under 8,000 schedulings a second, far below what one core serves. A
// server that slow is not overloaded: a few long waits then come from the
// machine (a CPU shared with a busy neighbour, a collection), and shedding
// would cost the few clients a resolver timeout for nothing.
const minSamples = 10

// windowDelay is the queue delay of a window: its delayQuantile, or 0 when
// it recorded fewer than minSamples waits.
func windowDelay(older, newer []uint64, buckets []float64) time.Duration {
	if recorded(older, newer) < minSamples {
		return 0
	}
	return time.Duration(quantile(delayQuantile, older, newer, buckets) * float64(time.Second))
}

// recorded is how many waits the histogram recorded between two reads.
func recorded(older, newer []uint64) uint64 {
	if len(older) != len(newer) {
		return 0
	}
	var n uint64
	for i := range newer {
		n += delta(older[i], newer[i])
	}
	return n
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
