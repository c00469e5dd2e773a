package mesosbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/procstat"
	"github.com/schemadns/schemadns/internal/toolreport"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// The poll tests, on the poller (mesosschema polling every second).
//
// CPU per poll: a series serves the poller bodies in turn, one per poll
// (the tap sets the next body right after a poll is answered; the next
// poll comes a refresh after the poller is done with it). At the arrival
// of the series' first poll and of the poll after its last, while the
// poller waits for the master's answer, the tap reads the CPU time of the
// poller and of mesosschema polling once an hour (the idle process); the
// series' CPU is the poller's over that window net of the idle one's. The
// first arrival also reads, before the CPU, the poller's metrics and SOA
// serial; the last one after it, so that neither read is in the window.
//
// Poll-to-answer: a change is served from one poll on; a checker asks the
// name the change creates every millisecond from the moment it is set; the
// time runs from the moment the master started answering the poll that
// carried it (its status line reached the tap) to the first answer that
// shows the change.

// pollWait bounds the wait for one poll: a refresh, the decode of a
// state of tens of megabytes on a slow machine, and some.
const pollWait = 60 * time.Second

// Kinds of poll series, in the order they run.
const (
	PollUnchanged = "unchanged"
	PollSame      = "same-records"
	PollOne       = "one-task"
	pollPercent   = "one-percent"
	pollMany      = "many-tasks"
)

// fewShare is the share of running tasks the small change replaces: the
// change a poll of a busy cluster typically brings, next to the large one
// (-mesos-replace, 10%), so that a poll's cost is seen to follow the change.
const fewShare = 0.01

// PollSeries is the CPU of one series of polls.
type PollSeries struct {
	Kind  string
	What  string // what each poll served
	Polls int
	// Seconds is the window, from the first poll's arrival to the arrival
	// of the poll after the last; CPU and IdleCPU are the poller's and the
	// idle process's CPU seconds over it.
	Seconds, CPU, IdleCPU float64
	// Results are the growth of coredns_mesosschema_polls_total by result
	// over the window; StatesUnchanged that of
	// coredns_mesosschema_states_unchanged_total.
	Results         map[string]int
	StatesUnchanged int
	// PollSeconds is the mean of coredns_mesosschema_poll_duration_seconds
	// over the window: the fetch and, for new bytes, the decode.
	PollSeconds float64
	// SerialBefore and SerialAfter are the SOA serials at the window's ends.
	SerialBefore, SerialAfter uint32
	// Mismatched polls were not served the body the series set (the tap
	// set it too late): they are in the window all the same.
	Mismatched int
}

// PerPollMs is the series' CPU per poll net of the idle process, ms.
func (p PollSeries) PerPollMs() float64 {
	if p.Polls == 0 {
		return 0
	}
	return (p.CPU - p.IdleCPU) / float64(p.Polls) * 1e3
}

// AnswerTimes are the poll-to-answer times of one kind of change.
type AnswerTimes struct {
	Kind     string
	Replaced int // running tasks each change replaces
	// Ms are by change the milliseconds from the start of the master's
	// answer to the poll carrying it to the first DNS answer that showed
	// it; TransferMs the answer's first to last byte through the tap.
	Ms, TransferMs []float64
	Timeouts       int
	// Mismatched counts the polls after a change was set that did not
	// carry it (it was set too late for them): its time runs from the one
	// that did.
	Mismatched int
}

// pollTests runs the series, then the poll-to-answer times, with this
// process off the server's CPU, and reads the poller's memory.
func (r *mesosRun) pollTests(ctx context.Context) error {
	if err := pinSelf(r.Options); err != nil {
		return err
	}
	defer unpinSelf(r.Options)
	specs := r.seriesSpecs()
	for _, spec := range specs {
		res, err := r.Series(ctx, spec, r.Opts.Polls, nil)
		if err != nil {
			return fmt.Errorf("%s polls: %w", spec.kind, err)
		}
		r.mr.Polls = append(r.mr.Polls, res)
		logf("%-12s polls: %d in %.1fs, CPU %.1f ms a poll net of %.0f ms idle in all; polls by result %v, states unchanged %d, mean poll %.0f ms, serial %d → %d",
			spec.kind, res.Polls, res.Seconds, res.PerPollMs(), res.IdleCPU*1e3, res.Results, res.StatesUnchanged, res.PollSeconds*1e3, res.SerialBefore, res.SerialAfter)
	}
	for _, n := range []int{1, r.manyTasks()} {
		res, err := r.answerTimes(ctx, n)
		if err != nil {
			return fmt.Errorf("poll to answer, %s: %w", res.Kind, err)
		}
		r.mr.Latency = append(r.mr.Latency, res)
		logf("poll to answer, %s: median %.0f ms, worst %.0f ms over %d changes (%d timeouts); transfer median %.0f ms",
			res.Kind, perf.Median(res.Ms), perf.MaxOf(res.Ms), len(res.Ms), res.Timeouts, perf.Median(res.TransferMs))
	}
	if err := r.profilePolls(ctx, specs[0], specs[2]); err != nil {
		return err
	}
	return r.pollerAfter()
}

// manyTasks is how many running tasks the large change replaces.
func (r *mesosRun) manyTasks() int {
	return r.share(r.Opts.Replace)
}

// share is how many running tasks make share of them, at least one.
func (r *mesosRun) share(share float64) int {
	return max(1, int(float64(r.mr.State.Running)*share+0.5))
}

// changeKind names a change of n tasks.
func (r *mesosRun) changeKind(n int) string {
	if n == 1 {
		return "one task replaced"
	}
	return fmt.Sprintf("%.0f%% of tasks replaced", 100*r.Opts.Replace)
}

// seriesSpecs are the kinds of poll, in the order they run: the same
// bytes, new bytes with the same records, one task replaced, 1%, many.
func (r *mesosRun) seriesSpecs() []seriesSpec {
	many, few := r.manyTasks(), r.share(fewShare)
	m := newMutator(mesosZone, 7)
	one, _ := m.replace(r.base, 1)
	some, _ := m.replace(r.base, few)
	lots, _ := m.replace(r.base, many)
	marshal := mesosstatetest.Marshal
	return []seriesSpec{
		{PollUnchanged, "the same bytes every poll", [][]byte{r.body}},
		{PollSame, "new bytes, the same records: a running task's TASK_STARTING timestamp moves, in turn two values", [][]byte{marshal(touch(r.base, 1)), marshal(touch(r.base, 2))}},
		{PollOne, "one running task replaced by a new instance, and back, in turn", [][]byte{r.body, marshal(one)}},
		{pollPercent, fmt.Sprintf("%s running tasks (%.0f%%) replaced by new instances, and back, in turn", toolreport.Thousands(few), 100*fewShare), [][]byte{r.body, marshal(some)}},
		{pollMany, fmt.Sprintf("%s running tasks (%.0f%%) replaced by new instances, and back, in turn", toolreport.Thousands(many), 100*r.Opts.Replace), [][]byte{r.body, marshal(lots)}},
	}
}

// pollerAfter reads the poller's memory after the poll tests, and how many
// polls it made in all.
func (r *mesosRun) pollerAfter() error {
	poller := r.servers[KeyMesosPoller]
	mem, err := poller.ReadMemory()
	if err != nil {
		return err
	}
	r.mr.Memory[KeyMesosPoller] = mem
	if err := r.heapProfile(poller); err != nil {
		return err
	}
	vals, err := server.PromValues(poller)
	if err != nil {
		return err
	}
	for _, result := range []string{"changed", "unchanged", "held", "error"} {
		r.mr.PollerPolls += int(vals[`coredns_mesosschema_polls_total{result="`+result+`"}`])
	}
	logf("%s after the poll tests (%d polls in all): heap %.1f MiB, RSS %.1f MiB, peak RSS %.1f MiB", KeyMesosPoller, r.mr.PollerPolls,
		float64(mem.HeapInuse)/mib, float64(mem.RSS)/mib, float64(mem.PeakRSS)/mib)
	return nil
}

// seriesSpec is a kind of poll: the bodies served in turn, one a poll.
type seriesSpec struct {
	kind, what string
	bodies     [][]byte
}

// profiledPolls is the length of the series a CPU profile is taken over.
const profiledPolls = 6

// profilePolls records the poller's CPU profile over a short series of
// each kind given (-profile; not in the figures).
func (r *mesosRun) profilePolls(ctx context.Context, specs ...seriesSpec) error {
	if r.Profile == "" {
		return nil
	}
	if err := os.MkdirAll(r.Profile, 0o755); err != nil {
		return err
	}
	poller := r.servers[KeyMesosPoller]
	for _, spec := range specs {
		path := filepath.Join(r.Profile, fmt.Sprintf("%s-poll-%s.cpu.pprof", r.mr.Shape.Name, spec.kind))
		// From the first poll of the series on, for about as many seconds
		// as it has polls: the warm-up poll is not in the profile.
		var done <-chan error
		profile := func() { done = server.CPUProfile(poller, profiledPolls, path) }
		if _, err := r.Series(ctx, spec, profiledPolls, profile); err != nil {
			return err
		}
		if err := <-done; err != nil {
			return err
		}
		logf("CPU profile of %s during %s polls: %s", poller, spec.kind, path)
	}
	return nil
}

// Series serves spec's bodies in turn, one per poll, and measures the
// poller's CPU over n polls (the first body is served by a warm-up poll
// before the window, so that the first poll measured is already of the
// kind). started, when not nil, is called when the first poll measured
// arrives (the warm-up poll's work is done by then); it must not block,
// and what it sets is seen once series returns.
func (r *mesosRun) Series(ctx context.Context, spec seriesSpec, n int, started func()) (PollSeries, error) {
	h := &seriesHook{poller: r.servers[KeyMesosPoller], idle: r.servers[KeyMesos], started: started}
	r.si.setHook(h.sample)
	defer r.si.setHook(nil)
	first, last, mismatched, err := r.servePolls(ctx, spec.bodies, n, h)
	if err != nil {
		return PollSeries{}, err
	}
	res := tally(spec, n, first, last)
	if res.Mismatched = mismatched; mismatched > 0 {
		r.note("%s polls: %d of %d were not served the body set for them (set too late); they count in the window all the same", spec.kind, mismatched, n)
	}
	return res, nil
}

// seriesHook reads, at a poll's arrival, the CPU time of the poller and
// of the idle process, and when armed the poller's metrics and serial:
// before the CPU at the window's start, after it at its end, so that
// neither read falls in the window.
type seriesHook struct {
	poller, idle *server.Server
	started      func()
	armed        atomic.Int32 // 0: CPU only; armStart; armEnd
	err          atomic.Pointer[error]
}

const (
	armStart = 1
	armEnd   = 2
)

func (h *seriesHook) sample() pollSample {
	var s pollSample
	mode := h.armed.Load()
	if mode == armStart {
		h.extra(&s)
		if h.started != nil {
			h.started()
		}
	}
	s.cpu, _ = procstat.CPUSeconds(h.poller.PID())
	s.idle, _ = procstat.CPUSeconds(h.idle.PID())
	if mode == armEnd {
		h.extra(&s)
	}
	return s
}

func (h *seriesHook) extra(s *pollSample) {
	var err error
	if s.metrics, err = server.PromValues(h.poller); err == nil {
		s.serial, err = mesosSerial(h.poller)
	}
	if err != nil {
		h.err.Store(&err)
	}
}

// servePolls serves the warm-up poll bodies[0], then polls 1 to n
// bodies[i%len], and returns the events of poll 1 and of the poll after n
// (the window's ends), and how many polls got another body than the one
// set for them.
func (r *mesosRun) servePolls(ctx context.Context, bodies [][]byte, n int, h *seriesHook) (first, last pollEvent, mismatched int, err error) {
	// A poll that has just been answered: the next is a refresh away.
	r.si.drain()
	if _, err = r.si.next(ctx, pollWait); err != nil {
		return
	}
	if _, err = r.si.serve(bodies[0]); err != nil {
		return
	}
	if _, err = r.si.next(ctx, pollWait); err != nil { // the warm-up poll
		return
	}
	for i := 1; i <= n+1; i++ {
		gz, mode := 0, int32(0)
		if i <= n {
			if gz, err = r.si.serve(bodies[i%len(bodies)]); err != nil {
				return
			}
		}
		switch i {
		case 1:
			mode = armStart
		case n + 1:
			mode = armEnd
		}
		h.armed.Store(mode)
		if last, err = r.si.next(ctx, pollWait); err != nil {
			return
		}
		if p := h.err.Load(); p != nil {
			err = *p
			return
		}
		if i <= n && last.length != gz {
			mismatched++
		}
		if i == 1 {
			first = last
		}
	}
	h.armed.Store(0)
	return first, last, mismatched, nil
}

// tally is a series' figures from the samples at the window's ends.
func tally(spec seriesSpec, n int, first, last pollEvent) PollSeries {
	a, b := first.sample, last.sample
	res := PollSeries{Kind: spec.kind, What: spec.what, Polls: n, Seconds: last.arrived.Sub(first.arrived).Seconds(),
		CPU: b.cpu - a.cpu, IdleCPU: b.idle - a.idle, SerialBefore: a.serial, SerialAfter: b.serial, Results: map[string]int{}}
	grew := func(name string) float64 { return b.metrics[name] - a.metrics[name] }
	for _, result := range []string{"changed", "unchanged", "held", "error"} {
		if d := int(grew(`coredns_mesosschema_polls_total{result="` + result + `"}`)); d != 0 {
			res.Results[result] = d
		}
	}
	res.StatesUnchanged = int(grew("coredns_mesosschema_states_unchanged_total"))
	if count := grew("coredns_mesosschema_poll_duration_seconds_count"); count > 0 {
		res.PollSeconds = grew("coredns_mesosschema_poll_duration_seconds_sum") / count
	}
	return res
}

// preparedChange is a state to serve and the name it creates.
type preparedChange struct {
	body  []byte
	probe probe
}

// AnswerTimes serves changes, each replacing n running tasks of the
// state served before it, one a poll, and times each from the master's
// answer to the poll that carries it to the first DNS answer that shows
// it.
func (r *mesosRun) answerTimes(ctx context.Context, n int) (AnswerTimes, error) {
	res := AnswerTimes{Kind: r.changeKind(n), Replaced: n}
	changes := r.Opts.Changes
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prepared := r.prepareChanges(ctx, n, changes)
	r.si.drain()
	ev, err := r.si.next(ctx, pollWait) // a poll just answered: the next is a refresh away
	if err != nil {
		return res, err
	}
	c, gz, err := r.serveChange(ctx, prepared, ev)
	if err != nil {
		return res, err
	}
	for k := range changes {
		seen := r.watch(ctx, res.Kind, c.probe)
		carrier, skipped, err := r.carrier(ctx, gz)
		if err != nil {
			return res, fmt.Errorf("change %d: %w", k+1, err)
		}
		res.Mismatched += skipped
		// The next change is set while the poller works on this one: it
		// asks again a refresh after it is done, no sooner. Its checker
		// starts once this change shows, still before that.
		if k+1 < changes {
			if c, gz, err = r.serveChange(ctx, prepared, carrier); err != nil {
				return res, err
			}
		}
		at, ok := <-seen
		if !ok {
			res.Timeouts++
			continue
		}
		res.Ms = append(res.Ms, float64(at.Sub(carrier.answered).Microseconds())/1e3)
		res.TransferMs = append(res.TransferMs, float64(carrier.done.Sub(carrier.answered).Microseconds())/1e3)
	}
	if res.Mismatched > 0 {
		r.note("poll to answer, %s: %d polls came before the change set for them was served (it was set too late); each change is timed from the poll that carried it", res.Kind, res.Mismatched)
	}
	return res, nil
}

// prepareChanges makes the states of the changes and encodes them, one
// ahead of the one served.
func (r *mesosRun) prepareChanges(ctx context.Context, n, changes int) <-chan preparedChange {
	prepared := make(chan preparedChange, 1)
	go func() {
		defer close(prepared)
		m, st := newMutator(mesosZone, uint64(n)), r.base
		for range changes {
			var p probe
			st, p = m.replace(st, n)
			select {
			case prepared <- preparedChange{mesosstatetest.Marshal(st), p}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return prepared
}

// watch asks the poller for p's name every millisecond until the answer
// holds p's address, and sends the moment it did (the channel is closed
// without a value after perf.LatencyTimeout).
func (r *mesosRun) watch(ctx context.Context, kind string, p probe) <-chan time.Time {
	seen := make(chan time.Time, 1)
	poller := r.servers[KeyMesosPoller]
	go func() {
		defer close(seen)
		start := time.Now()
		ch := perf.Change{Kind: kind, QName: p.name, Shows: func(m *dns.Msg) bool { return perf.HasA(m, p.addr.String()) }}
		if d, ok := perf.PollUntil(ctx, poller, ch, start); ok {
			seen <- start.Add(d)
		}
	}()
	return seen
}

// carrier waits for the poll that carries the state set (gzipped to gz
// bytes): the next one, unless it was set too late for it (skipped counts
// those).
func (r *mesosRun) carrier(ctx context.Context, gz int) (ev pollEvent, skipped int, err error) {
	for tries := 0; ; tries++ {
		if ev, err = r.si.next(ctx, pollWait); err != nil {
			return ev, skipped, err
		}
		if ev.length == gz {
			return ev, skipped, nil
		}
		if tries == 2 {
			return ev, skipped, fmt.Errorf("three polls were not served the state set (%d bytes gzipped; the last got %d)", gz, ev.length)
		}
		skipped++
	}
}

// serveChange serves the next prepared change from the next poll on,
// after last, a poll just answered; when that was too long ago for the
// change to be set safely before the next poll, after the next one.
func (r *mesosRun) serveChange(ctx context.Context, prepared <-chan preparedChange, last pollEvent) (preparedChange, int, error) {
	c, ok := <-prepared
	if !ok {
		return c, 0, fmt.Errorf("no change prepared: %w", ctx.Err())
	}
	if time.Since(last.done) > pollRefresh*3/4 {
		r.si.drain()
		if _, err := r.si.next(ctx, pollWait); err != nil {
			return c, 0, err
		}
	}
	gz, err := r.si.serve(c.body)
	return c, gz, err
}
