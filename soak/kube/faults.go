package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/tracked"
)

// recoveryNames are the services written after a fault to see that the
// servers take changes again; the checker leaves them out, since they
// change while it runs.
const recoveryNames = 20

// recoveryTimeout bounds the wait for the changes made after a fault.
const recoveryTimeout = 150 * time.Second

// checkedNames are the names checked during the relist and the faults:
// every tracked service but the probes' and the recovery ones.
func (e *env) checkedNames() []*tracked.Service { return e.fix.Services[probeServices+recoveryNames:] }

// recovery writes the recovery services once each, straight to the API
// server, and returns by server the seconds from since until every one of
// them is served, and how many never were.
func (e *env) recovery(ctx context.Context, since time.Time) (map[string]float64, map[string]int, error) {
	w, err := tracked.NewWriter(e.cluster.RESTConfig(), 1)
	if err != nil {
		return nil, nil, err
	}
	names := e.fix.Services[probeServices : probeServices+recoveryNames]
	r := rand.New(rand.NewPCG(uint64(since.UnixNano()), 3))
	for _, t := range names {
		if err := tracked.Retry(ctx, func() error { return w.Write(ctx, w.Clients[0], t, r) }); err != nil {
			return nil, nil, fmt.Errorf("write %s after the fault: %w", t.Name, err)
		}
		t.SettleHere()
	}
	took, never := map[string]float64{}, map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range e.servers {
		wg.Go(func() {
			_, n := tracked.Settle(ctx, s, names, recoveryTimeout)
			if n > 0 {
				logf("%s: %d of %d changes not served %s after the fault", s, n, len(names), recoveryTimeout)
			}
			mu.Lock()
			took[s.Key], never[s.Key] = time.Since(since).Seconds(), n
			mu.Unlock()
		})
	}
	wg.Wait()
	return took, never, ctx.Err()
}

// FaultResult is one fault's outcome.
type FaultResult struct {
	Name, What string
	Seconds    float64
	Check      map[string]observe.Count
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
			n += e.proxy.Reset()
		}
		return fmt.Sprintf("%d connections reset", n), nil
	}},
	{"stalled", "the proxy stops forwarding: connections stay open, no byte passes (watches stall)", true, func(ctx context.Context, e *env, d time.Duration) (string, error) {
		e.proxy.Stall()
		time.Sleep(d)
		e.proxy.Unstall()
		return "", nil
	}},
}

func runFaults(ctx context.Context, e *env) ([]*FaultResult, error) {
	var out []*FaultResult
	for _, f := range faults {
		logf("fault %s (%s)", f.name, e.cfg.Outage)
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
func (e *env) runFault(ctx context.Context, f fault) (*FaultResult, error) {
	h := observe.NewHealth(KeyOurs, "coredns_watchcache_api_reachable")
	hctx, stopHealth := context.WithCancel(ctx)
	var hwg sync.WaitGroup
	hwg.Go(func() { h.Watch(hctx, e.servers) })
	stopCheck := tracked.StartCheck(ctx, e.servers, e.checkedNames(), e.cfg.CheckRate, true)
	errs0, _ := e.ours().SumMetric("coredns_watchcache_errors_total")
	relists0, _ := e.ours().SumMetric("coredns_watchcache_relists_total")
	time.Sleep(2 * time.Second) // a "before" to compare with
	h.FaultBegins()
	note, err := f.apply(ctx, e, e.cfg.Outage)
	ended := h.FaultEnds()
	res := &FaultResult{Name: f.name, What: f.what, Seconds: e.cfg.Outage.Seconds(), Note: note, WantDown: f.wantDown}
	if err == nil {
		res.Recovery, res.RecoveryFailed, err = e.recovery(ctx, ended)
	}
	// Give the gauge its chance to come back before the sampling ends.
	for wait := time.Now().Add(30 * time.Second); h.UpAt() < 0 && time.Now().Before(wait); time.Sleep(250 * time.Millisecond) {
	}
	res.Check = stopCheck()
	stopHealth()
	hwg.Wait()
	res.Ready, res.Gauge, res.GaugeDown, res.GaugeUp = h.Summary()
	errs1, _ := e.ours().SumMetric("coredns_watchcache_errors_total")
	relists1, _ := e.ours().SumMetric("coredns_watchcache_relists_total")
	res.Errors, res.Relists = errs1-errs0, relists1-relists0
	for _, s := range e.servers {
		if aerr := e.alive(s); aerr != nil && err == nil {
			err = aerr
		}
	}
	return res, err
}
