package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// recoveryNames are the services written after a fault to see that the
// servers take changes again; the checker leaves them out, since they
// change while it runs.
const recoveryNames = 20

// recoveryTimeout bounds the wait for the changes made after a fault.
const recoveryTimeout = 150 * time.Second

// checkedNames are the names checked during the relist and the faults:
// every tracked service but the probes' and the recovery ones.
func (e *env) checkedNames() []*tracked { return e.fix.services[probeServices+recoveryNames:] }

// recovery writes the recovery services once each, straight to the API
// server, and returns by server the seconds from since until every one of
// them is served, and how many never were.
func (e *env) recovery(ctx context.Context, since time.Time) (map[string]float64, map[string]int, error) {
	w, err := newWriter(e.cluster.RESTConfig(), 1)
	if err != nil {
		return nil, nil, err
	}
	names := e.fix.services[probeServices : probeServices+recoveryNames]
	r := rand.New(rand.NewPCG(uint64(since.UnixNano()), 3))
	for _, t := range names {
		if err := retry(ctx, func() error { return w.write(ctx, w.clients[0], t, r) }); err != nil {
			return nil, nil, fmt.Errorf("write %s after the fault: %w", t.name, err)
		}
		t.settleHere()
	}
	took, never := map[string]float64{}, map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range e.servers {
		wg.Go(func() {
			_, n := settle(ctx, s, names, recoveryTimeout)
			if n > 0 {
				logf("%s: %d of %d changes not served %s after the fault", s, n, len(names), recoveryTimeout)
			}
			mu.Lock()
			took[s.key], never[s.key] = time.Since(since).Seconds(), n
			mu.Unlock()
		})
	}
	wg.Wait()
	return took, never, ctx.Err()
}

// health is what readiness and a connection gauge said, sampled every
// 250 ms, in each phase of a fault.
type health struct {
	// gaugeOf is the server whose gauge (the metric gaugeName) is read;
	// sizeName, when set, is a metric of the same server whose lowest and
	// highest value are kept by phase (the Mesos zone's names).
	gaugeOf, gaugeName, sizeName string

	mu sync.Mutex
	// ready counts, by server and phase, the samples that were ready
	// and all samples.
	ready, samples map[string]map[string]int
	// gauge is the lowest gauge per phase (over its samples: ours' over
	// the resources); down and up are when it first read 0 after the
	// fault began and 1 again after it ended, -1 if never.
	gauge, gaugeLast map[string]float64 // gaugeLast: the phase's last sample
	size             map[string][2]float64
	faultAt, endedAt time.Time
	down, up         float64
}

// Phases of a fault.
const (
	phaseBefore = "before"
	phaseDuring = "during"
	phaseAfter  = "after"
)

// newHealth samples readiness, and gaugeName of the server gaugeOf.
func newHealth(gaugeOf, gaugeName string) *health {
	return &health{gaugeOf: gaugeOf, gaugeName: gaugeName, ready: map[string]map[string]int{}, samples: map[string]map[string]int{},
		gauge: map[string]float64{}, gaugeLast: map[string]float64{}, size: map[string][2]float64{}, down: -1, up: -1}
}

// watch samples until ctx ends.
func (h *health) watch(ctx context.Context, servers []*server) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		h.sample(servers)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *health) phase() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.faultAt.IsZero():
		return phaseBefore
	case h.endedAt.IsZero():
		return phaseDuring
	}
	return phaseAfter
}

func (h *health) sample(servers []*server) {
	ph := h.phase()
	for _, s := range servers {
		ready := s.isReady()
		var gauge, size []float64
		if s.key == h.gaugeOf {
			gauge, _ = s.metric(h.gaugeName)
			if h.sizeName != "" {
				size, _ = s.metric(h.sizeName)
			}
		}
		h.record(s.key, ph, ready, gauge)
		h.recordSize(ph, size)
	}
}

// recordSize keeps the lowest and highest of the size metric's samples.
func (h *health) recordSize(ph string, size []float64) {
	if len(size) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lo, hi := slices.Min(size), slices.Max(size)
	if old, ok := h.size[ph]; ok {
		lo, hi = min(lo, old[0]), max(hi, old[1])
	}
	h.size[ph] = [2]float64{lo, hi}
}

// sizes returns the size metric's lowest and highest value by phase, and
// the gauge's last sample by phase.
func (h *health) sizes() (map[string][2]float64, map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.size), maps.Clone(h.gaugeLast)
}

func (h *health) record(key, ph string, ready bool, gauge []float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ready[key] == nil {
		h.ready[key], h.samples[key] = map[string]int{}, map[string]int{}
	}
	h.samples[key][ph]++
	if ready {
		h.ready[key][ph]++
	}
	if len(gauge) == 0 {
		return
	}
	low := slices.Min(gauge)
	h.gaugeLast[ph] = low
	if old, ok := h.gauge[ph]; !ok || low < old {
		h.gauge[ph] = low
	}
	switch {
	case ph == phaseDuring && low == 0 && h.down < 0:
		h.down = time.Since(h.faultAt).Seconds()
	case ph == phaseAfter && low == 1 && h.up < 0:
		h.up = time.Since(h.endedAt).Seconds()
	}
}

func (h *health) mark(at *time.Time) {
	h.mu.Lock()
	*at = time.Now()
	h.mu.Unlock()
}

// faultResult is one fault's outcome.
type faultResult struct {
	Name, What string
	Seconds    float64
	Check      map[string]checkCount
	// Ready is by server and phase "ready samples/samples"; Gauge is
	// ours' lowest api_reachable by phase.
	Ready              map[string]map[string]string
	Gauge              map[string]float64
	GaugeDown, GaugeUp float64 // seconds: to 0 after the start, back to 1 after the end; -1 never
	WantDown           bool    // the gauge must fall to 0 during this fault
	Errors, Relists    float64 // ours: coredns_watchcache_errors_total and relists_total, increase
	Recovery           map[string]float64
	RecoveryFailed     map[string]int
	Note               string
}

// fault is one way of breaking the API server for the outage's length.
// wantDown: the API server cannot be reached during it, so the gauge must
// say so; while connections are only reset, every reconnection reaches it.
type fault struct {
	name, what string
	wantDown   bool
	apply      func(ctx context.Context, e *env, d time.Duration) (string, error)
}

var faults = []fault{
	{"stopped", "kube-apiserver killed, started again after the outage", true, func(ctx context.Context, e *env, d time.Duration) (string, error) {
		if err := e.cluster.StopAPIServer(); err != nil {
			return "", fmt.Errorf("stop kube-apiserver: %w", err)
		}
		time.Sleep(d)
		return "", e.cluster.StartAPIServer(ctx)
	}},
	{"reset", "every connection through the proxy reset (RST) every 2 s", false, func(ctx context.Context, e *env, d time.Duration) (string, error) {
		n := 0
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(2 * time.Second) {
			n += e.proxy.reset()
		}
		return fmt.Sprintf("%d connections reset", n), nil
	}},
	{"stalled", "the proxy stops forwarding: connections stay open, no byte passes (watches stall)", true, func(ctx context.Context, e *env, d time.Duration) (string, error) {
		e.proxy.stall()
		time.Sleep(d)
		e.proxy.unstall()
		return "", nil
	}},
}

func runFaults(ctx context.Context, e *env) ([]*faultResult, error) {
	var out []*faultResult
	for _, f := range faults {
		logf("fault %s (%s)", f.name, e.cfg.outage)
		r, err := e.runFault(ctx, f)
		if r != nil {
			out = append(out, r)
		}
		if err != nil {
			return out, fmt.Errorf("fault %s: %w", f.name, err)
		}
	}
	return out, nil
}

// runFault applies f under the checker's load, with readiness and the
// gauge sampled, then makes changes and times their arrival.
func (e *env) runFault(ctx context.Context, f fault) (*faultResult, error) {
	h := newHealth(keyOurs, "coredns_watchcache_api_reachable")
	hctx, stopHealth := context.WithCancel(ctx)
	var hwg sync.WaitGroup
	hwg.Go(func() { h.watch(hctx, e.servers) })
	stopCheck := startCheck(ctx, e.servers, e.checkedNames(), e.cfg.checkRate, true)
	errs0, _ := sumMetric(e.ours(), "coredns_watchcache_errors_total")
	relists0, _ := sumMetric(e.ours(), "coredns_watchcache_relists_total")
	time.Sleep(2 * time.Second) // a "before" to compare with
	h.mark(&h.faultAt)
	note, err := f.apply(ctx, e, e.cfg.outage)
	h.mark(&h.endedAt)
	res := &faultResult{Name: f.name, What: f.what, Seconds: e.cfg.outage.Seconds(), Note: note, WantDown: f.wantDown}
	if err == nil {
		res.Recovery, res.RecoveryFailed, err = e.recovery(ctx, h.endedAt)
	}
	// Give the gauge its chance to come back before the sampling ends.
	for wait := time.Now().Add(30 * time.Second); h.upAt() < 0 && time.Now().Before(wait); time.Sleep(250 * time.Millisecond) {
	}
	res.Check = stopCheck()
	stopHealth()
	hwg.Wait()
	res.Ready, res.Gauge, res.GaugeDown, res.GaugeUp = h.summary()
	errs1, _ := sumMetric(e.ours(), "coredns_watchcache_errors_total")
	relists1, _ := sumMetric(e.ours(), "coredns_watchcache_relists_total")
	res.Errors, res.Relists = errs1-errs0, relists1-relists0
	for _, s := range e.servers {
		if aerr := e.alive(s); aerr != nil && err == nil {
			err = aerr
		}
	}
	return res, err
}

func (h *health) upAt() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

func (h *health) summary() (map[string]map[string]string, map[string]float64, float64, float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ready := map[string]map[string]string{}
	for key, by := range h.samples {
		ready[key] = map[string]string{}
		for ph, n := range by {
			ready[key][ph] = fmt.Sprintf("%d/%d", h.ready[key][ph], n)
		}
	}
	return ready, h.gauge, h.down, h.up
}
