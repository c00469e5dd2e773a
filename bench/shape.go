package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/bench/internal/churn"
	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/kubeapi"
)

// shapeRun is the state of one shape's measurement (or of one run of the
// threshold shape, thresholds.go).
type shapeRun struct {
	*env
	sr      *results.ShapeResult
	cluster *kubeapi.Cluster
	fix     *fixture.Fixture          // the fixture's objects (S1–S4)
	changes *fixture.Changer          // the programming-latency services (Perf shapes)
	servers map[string]*server.Server // running, by target
	files   queryFiles
	// ours and stock are the pair measured: with pods verified on S1–S4,
	// with the run's pods option on the threshold shape.
	ours, stock server.Target
	// tag names the run's files in the work directory: the shape's name,
	// and the run's on the threshold shape.
	tag string
	// thr is the threshold shape's objects, when the run is one of its
	// (its probes, mix and churned services come from there).
	thr *thresholdData
	// churner rewrites the slices; made on the first churn, and shared by
	// the threshold shape's runs (each goes on from the state the last
	// one left in the API).
	churner *churn.Churn
}

// measureShape starts an API server of its own for the shape, loads it,
// starts the targets one after the other (each timed to its first complete
// answer and its memory read), runs the default fixture's tests when the
// shape has them, then the churn, and stops everything.
func (e *env) measureShape(ctx context.Context, sh fixture.Shape) (*results.ShapeResult, error) {
	sr := &results.ShapeResult{Shape: sh, Memory: map[string]server.Memory{}, FirstAnswer: map[string][]float64{}, Together: map[string][]float64{}}
	logf("%s %s: %s", sh.Name, sh.Title, sh.Describe())
	logFile, err := os.Create(filepath.Join(e.work, sh.Name+"-kubeapi.log"))
	if err != nil {
		return sr, err
	}
	defer logFile.Close()
	c, err := kubeapi.Start(ctx, kubeapi.Options{Log: logFile, ReadyTimeout: 3 * time.Minute})
	if err != nil {
		return sr, err
	}
	defer c.Stop()
	r := &shapeRun{env: e, sr: sr, cluster: c, servers: map[string]*server.Server{}, ours: server.TargetOurs, stock: server.TargetStock, tag: sh.Name}
	defer r.stop()
	if r.fix, err = fixture.New(e.cfg.Loaders, sh, c); err != nil {
		return sr, err
	}
	start := time.Now()
	if err := r.fix.Load(ctx); err != nil {
		return sr, fmt.Errorf("load: %w", err)
	}
	if sh.Perf {
		if r.changes, err = r.fix.SetupLatency(ctx); err != nil {
			return sr, fmt.Errorf("latency services: %w", err)
		}
	}
	sr.LoadSeconds = time.Since(start).Seconds()
	if e.inprocess != nil {
		e.inprocess() // its build must not run beside the measurements; an error shows where it is used
	}
	if err := r.timedStarts(ctx); err != nil {
		return sr, err
	}
	if err := r.startsTogether(ctx); err != nil {
		return sr, err
	}
	for _, t := range e.targets(sh) {
		if err := r.start(ctx, t); err != nil {
			return sr, err
		}
	}
	if sh.Perf {
		if err := r.perf(ctx); err != nil {
			return sr, err
		}
		r.stop(server.KeyFloor, server.KeyOursMC, server.KeyStockMC) // the churn is ours against stock alone
	}
	if err := r.churn(ctx); err != nil {
		return sr, fmt.Errorf("churn: %w", err)
	}
	r.stop()
	if sh.Perf {
		return sr, r.goBench(ctx)
	}
	return sr, nil
}

// targets are the servers started for a shape, in start and round order:
// ours and stock everywhere; the floor and the multicluster pair on the
// default fixture.
func (e *env) targets(sh fixture.Shape) []server.Target {
	ts := []server.Target{server.TargetOurs, server.TargetStock}
	if sh.Perf {
		ts = append(ts, server.TargetFloor)
		if e.cfg.multicluster && sh.Imports > 0 {
			ts = append(ts, server.TargetOursMC, server.TargetStockMC)
		}
	}
	for _, t := range ts {
		e.res.Targets[t.Key] = t.Label
	}
	return ts
}

// timedStarts starts ours and stock in turn, -starts minus one times each,
// and stops each once it answers the probes completely: the times to the
// first complete answer besides those of the processes measured next.
func (r *shapeRun) timedStarts(ctx context.Context) error {
	for range r.cfg.starts - 1 {
		for _, t := range []server.Target{r.ours, r.stock} {
			s, err := r.launch(ctx, t)
			if err != nil {
				return err
			}
			r.sr.FirstAnswer[t.Key] = append(r.sr.FirstAnswer[t.Key], s.SyncTime.Seconds())
			logf("started alone: %s answers completely after %s", t.Key, s.SyncTime.Round(time.Millisecond))
			r.stop(t.Key)
		}
	}
	return nil
}

// startsTogether starts ours and stock at the same moment, -starts times,
// unpinned (each may take a CPU of its own, as replicas on two nodes
// would), and times each to its first complete answer: they list from the
// one API server at once, as after a control-plane restart or when stock
// and ours run side by side during an upgrade.
func (r *shapeRun) startsTogether(ctx context.Context) error {
	unpinned := *r.cfg
	unpinned.Pin = false
	for range r.cfg.starts {
		pair := []server.Target{r.ours, r.stock}
		started := make([]*server.Server, len(pair))
		errs := make([]error, len(pair))
		var wg sync.WaitGroup
		for i, t := range pair {
			wg.Go(func() { started[i], errs[i] = r.launchWith(ctx, &unpinned, t) })
		}
		wg.Wait()
		for i, t := range pair {
			if started[i] != nil {
				r.servers[t.Key] = started[i]
			}
			if errs[i] != nil {
				return errs[i]
			}
			r.sr.Together[t.Key] = append(r.sr.Together[t.Key], started[i].SyncTime.Seconds())
		}
		logf("started together: kubeschema answers completely after %s, stock after %s",
			started[0].SyncTime.Round(time.Millisecond), started[1].SyncTime.Round(time.Millisecond))
		r.stop(server.KeyOurs, server.KeyStock)
	}
	return nil
}

// launch starts t and waits until it answers the probes completely.
func (r *shapeRun) launch(ctx context.Context, t server.Target) (*server.Server, error) {
	s, err := r.launchWith(ctx, r.cfg, t)
	if s != nil {
		r.servers[t.Key] = s
	}
	return s, err
}

// launchWith is launch with cfg's pinning; the caller keeps the server.
func (r *shapeRun) launchWith(ctx context.Context, cfg *config, t server.Target) (*server.Server, error) {
	s, err := server.Start(cfg.Options, r.work, r.cluster.Kubeconfig, r.tag, t)
	if err != nil {
		return nil, err
	}
	probes := []server.Sentinel{{Name: "whoami.bench.", Qtype: dns.TypeA}} // whoami answers in Additional: any NOERROR will do
	switch {
	case t.Kube && r.thr != nil:
		probes = r.thr.probes(r.sr.Run.Pods)
	case t.Kube:
		probes = r.clusterSentinels()
	}
	if t.MC {
		probes = append(probes, r.fix.MulticlusterSentinels()...)
	}
	return s, s.WaitSynced(ctx, probes, 10*time.Minute)
}

// start starts t and waits until it answers the probes completely; for a
// Kubernetes target it records the time that took from the process's start
// and, after a short settling, its memory.
func (r *shapeRun) start(ctx context.Context, t server.Target) error {
	s, err := r.launch(ctx, t)
	if err != nil {
		return err
	}
	if t.Kube {
		r.sr.FirstAnswer[t.Key] = append(r.sr.FirstAnswer[t.Key], s.SyncTime.Seconds())
		time.Sleep(2 * time.Second) // let the first burst of work settle
		if r.sr.Memory[t.Key], err = s.ReadMemory(); err != nil {
			return err
		}
		if err := r.heapProfile(s); err != nil {
			return err
		}
		m := r.sr.Memory[t.Key]
		logf("%s answers completely %s after start; heap %.1f MiB, RSS %.1f MiB (peak %.1f MiB)", s, s.SyncTime.Round(time.Millisecond),
			float64(m.HeapInuse)/mib, float64(m.RSS)/mib, float64(m.PeakRSS)/mib)
	}
	return nil
}

// stop stops the servers of the given targets, or all.
func (r *shapeRun) stop(keys ...string) { server.StopAll(r.servers, keys...) }

// churn rewrites EndpointSlices under ours and stock.
func (r *shapeRun) churn(ctx context.Context) error {
	cc := r.cfg.churn
	ours, stock := r.servers[server.KeyOurs], r.servers[server.KeyStock]
	if r.churner == nil {
		r.churner = r.fix.NewChurn(cc)
	}
	ch := r.churner
	logf("churn: %d updates/s offered for %s by %d writers over %d services; checking %d headless names at %d q/s per server",
		cc.Rate, cc.Duration, cc.Writers, ch.Services(), ch.Checked(), cc.CheckRate)
	if r.cfg.Pin { // each server may take a CPU of its own: neither waits for the other's work
		for _, s := range []*server.Server{ours, stock} {
			if err := s.Unpin(); err != nil {
				return err
			}
		}
	}
	res, err := ch.Run(ctx, []*server.Server{ours, stock})
	r.sr.Churn = res
	if err != nil {
		return err
	}
	logf("churn: %d updates in %.1fs (%.0f/s), %d failed", res.Updates, res.Seconds, res.Rate, res.Failed)
	for _, k := range []string{server.KeyOurs, server.KeyStock} {
		c := res.Check[k]
		logf("  %s: peak RSS %.1f MiB, after %.1f MiB; CPU %.1fs; %d answers checked, %d wrong, %d errors, %d truncated, %d stale at the end",
			k, float64(res.PeakRSS[k])/mib, float64(res.After[k].RSS)/mib, res.CPU[k], c.Answers, c.Wrong, c.Errors, c.Truncated, c.StaleAtEnd)
	}
	for _, w := range []struct {
		name string
		w    *churn.Window
	}{{"address changes, no checker", res.Net}, {"annotation only, no checker", res.Quiet}} {
		if w.w == nil {
			continue
		}
		logf("  window, %s: %d updates in %.1fs; CPU µs per update: kubeschema %s, stock %s; skipped by kubeschema: %s",
			w.name, w.w.Updates, w.w.Seconds, w.w.PerUpdate(server.KeyOurs), w.w.PerUpdate(server.KeyStock), w.w.SkippedText())
	}
	return nil
}

// clusterSentinels are the fixture's probes of a complete answer, and the
// latency services.
func (r *shapeRun) clusterSentinels() []server.Sentinel {
	out := r.fix.Sentinels()
	if r.changes != nil {
		out = append(out, r.changes.Sentinels()...)
	}
	return out
}
