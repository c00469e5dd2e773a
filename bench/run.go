package main

import (
	"github.com/schemadns/schemadns/bench/internal/report"

	"github.com/schemadns/schemadns/bench/internal/results"

	"github.com/schemadns/schemadns/bench/internal/mesosbench"

	"github.com/schemadns/schemadns/bench/internal/churn"
	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/bench/internal/server"

	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/test/kubeapi"
	"github.com/schemadns/schemadns/test/toolflags"
	"github.com/schemadns/schemadns/test/toolreport"
)

// env is one run's state.
type env struct {
	cfg       *config
	work      string
	res       *results.Results
	inprocess func() (string, error) // the benchmark binary, once built
	// s5Load is the fixed load of the threshold shape's cluster mix when
	// its first run calibrated it (S3 not measured, no -qps).
	s5Load int
}

func run(ctx context.Context, cfg *config, args []string) error {
	if err := checkTools(cfg); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "schemadns-bench-")
	if err != nil {
		return err
	}
	if cfg.Keep {
		logf("work directory (kept): %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	e := &env{cfg: cfg, work: work, res: newResults(cfg, args)}
	type built struct {
		bin string
		err error
	}
	if slices.ContainsFunc(cfg.shapes, func(s fixture.Shape) bool { return s.Perf }) {
		// Built while the first shape loads; a build still running when
		// the run ends is stopped.
		buildCtx, stopBuild := context.WithCancel(ctx)
		defer stopBuild()
		buildc := make(chan built, 1)
		go func() { bin, err := perf.BuildInprocess(buildCtx, cfg.Root, work); buildc <- built{bin, err} }()
		e.inprocess = sync.OnceValues(func() (string, error) { b := <-buildc; return b.bin, b.err })
	}

	for _, sh := range cfg.shapes {
		if ctx.Err() != nil {
			break
		}
		if sh.Cluster != nil {
			srs, err := e.measureThresholds(ctx, sh)
			e.res.Shapes = append(e.res.Shapes, srs...)
			if err != nil {
				e.res.Errors = append(e.res.Errors, fmt.Sprintf("%s: %v", sh.Name, err))
				logf("%s: %v", sh.Name, err)
			}
			continue
		}
		sr, err := e.measureShape(ctx, sh)
		if len(sr.Memory) > 0 {
			e.res.Shapes = append(e.res.Shapes, sr)
		}
		if err != nil {
			e.res.Errors = append(e.res.Errors, fmt.Sprintf("%s: %v", sh.Name, err))
			logf("%s: %v", sh.Name, err)
		}
	}
	for _, sh := range cfg.mesos {
		if ctx.Err() != nil {
			break
		}
		mr, err := mesosbench.Measure(ctx, e.mesosEnv(), sh)
		if len(mr.Memory) > 0 {
			e.res.Mesos = append(e.res.Mesos, mr)
		}
		if err != nil {
			e.res.Errors = append(e.res.Errors, fmt.Sprintf("%s: %v", sh.Name, err))
			logf("%s: %v", sh.Name, err)
		}
	}
	e.res.Finished, e.res.Machine.LoadEnd = time.Now(), toolreport.LoadAverage()
	if len(e.res.Shapes) == 0 && len(e.res.Mesos) == 0 {
		return fmt.Errorf("nothing measured: %s", strings.Join(e.res.Errors, "; "))
	}
	if cfg.keepOthers {
		if err := results.KeepOthers(cfg.OutDir, e.res); err != nil {
			return err
		}
	}
	if err := report.Write(cfg.OutDir, e.res); err != nil {
		return err
	}
	logf("wrote %s", filepath.Join(cfg.OutDir, "benchmarks.md"))
	if len(e.res.Errors) > 0 {
		return errors.New(strings.Join(e.res.Errors, "; "))
	}
	return nil
}

// mesosEnv is what the Mesos shapes take from the run.
func (e *env) mesosEnv() *mesosbench.Env {
	return &mesosbench.Env{Settings: e.cfg.Settings, Opts: e.cfg.mesosOpts, Profile: e.cfg.profile, Work: e.work, Targets: e.res.Targets}
}

// checkTools fails early, with the fix, when a tool is missing.
func checkTools(cfg *config) error {
	need := []string{"dnsperf", "go"}
	if cfg.Pin {
		need = append(need, "taskset")
	}
	for _, t := range need {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found: run bench/deps.sh (make bench does)", t)
		}
	}
	if _, err := os.Stat(cfg.CoreDNS); err != nil {
		return fmt.Errorf("%w: run make build (make bench does)", err)
	}
	return nil
}

func newResults(cfg *config, args []string) *results.Results {
	pinning := "none (-pin=false)"
	if cfg.Pin {
		pinning = fmt.Sprintf("taskset: every DNS server process and the in-process benchmark on CPU %d (so GOMAXPROCS=1 for all), dnsperf on CPU %d", cfg.ServerCPU, cfg.ClientCPU)
	}
	return &results.Results{
		Started: time.Now(), Command: "cd bench && go run . " + toolflags.ShellJoin(args), Note: cfg.Note, Scale: cfg.Scale,
		Machine: results.ReadMachine(cfg.CoreDNS), Rounds: cfg.Rounds, Duration: cfg.Duration.String(), SatDuration: cfg.SatDuration.String(),
		Changes: cfg.changes, Benchtime: cfg.Benchtime, Pinning: pinning, Commands: map[string]string{},
		Churn:   results.ChurnSettings{Rate: cfg.churn.Rate, Writers: cfg.churn.Writers, CheckRate: cfg.churn.CheckRate, Duration: cfg.churn.Duration.String()},
		Targets: map[string]string{},
	}
}

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

// queryFiles are the query files of the default fixture.
type queryFiles struct{ mix, mc, cases string }

// perf runs the default fixture's tests on the running targets.
func (r *shapeRun) perf(ctx context.Context) error {
	if err := r.writeFiles(); err != nil {
		return err
	}
	r.sr.Perf = &perf.Figures{}
	r.sr.Perf.CrossCheck = r.crossChecks()
	plans, err := r.runRounds(ctx)
	if err != nil {
		return err
	}
	if err := r.profiles(ctx, plans); err != nil {
		return err
	}
	logf("programming latency: %d changes", r.cfg.changes)
	p := r.sr.Perf
	p.Latency, p.LatencyPaired, err = perf.MeasureLatency(ctx, r.changes, []*server.Server{r.servers[server.KeyOurs], r.servers[server.KeyStock]}, r.cfg.changes)
	if err != nil {
		return fmt.Errorf("programming latency: %w", err)
	}
	return nil
}

// writeFiles writes the query files of the default fixture.
func (r *shapeRun) writeFiles() error {
	p := func(name string) string { return filepath.Join(r.work, r.tag+"-"+name) }
	r.files = queryFiles{mix: p("mix.txt"), mc: p("multicluster.txt"), cases: p("cases.txt")}
	mix := r.fix.ClusterMix()
	r.res.Mix = querymix.Describe(mix)
	big := r.fix.Largest()
	bigQ := querymix.Query{Kind: fmt.Sprintf("%s A over TCP", big.Name), Name: big.Name + "." + big.NS + ".svc.cluster.local.", Qtype: dns.TypeA, Expect: "answer", TCP: true}
	cases := append(querymix.Samples(mix), bigQ)
	errs := []error{querymix.WriteQueries(r.files.mix, querymix.Generate(mix, querymix.Lines)), querymix.WriteCases(r.files.cases, cases)}
	if r.fix.Imports() > 0 {
		mcMix := r.fix.MulticlusterMix()
		r.res.MCMix = querymix.Describe(mcMix)
		errs = append(errs, querymix.WriteQueries(r.files.mc, querymix.Generate(mcMix, querymix.Lines)))
	}
	return errors.Join(errs...)
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

// plans are the tests of a round, with the rates set.
func (r *shapeRun) plans(ctx context.Context) ([]perf.Plan, error) {
	pick := func(keys ...string) []*server.Server {
		var out []*server.Server
		for _, k := range keys {
			if s := r.servers[k]; s != nil {
				out = append(out, s)
			}
		}
		return out
	}
	cfg, sh, p := r.cfg, r.sr.Shape, r.sr.Perf
	mixed := perf.Spec{File: r.files.mix, Duration: cfg.Duration, Clients: 4, Outstanding: 100, Verbose: true}
	big := r.fix.Largest()
	tcp := perf.Spec{TCP: true, TCPName: big.Name + "." + big.NS + ".svc.cluster.local.", TCPMin: sh.BigHeadless[len(sh.BigHeadless)-1],
		Duration: cfg.Duration, Clients: 4}
	mc := perf.Spec{File: r.files.mc, Duration: cfg.Duration, Clients: 4, Outstanding: 100, Verbose: true}
	sat := perf.Spec{File: r.files.mix, Duration: cfg.SatDuration, Clients: 8, Outstanding: 500}
	plans := []perf.Plan{
		{Name: perf.TestMixed, Targets: pick(server.KeyOurs, server.KeyStock, server.KeyFloor), Spec: mixed},
		{Name: perf.TestTCP, Targets: pick(server.KeyOurs, server.KeyStock), Spec: tcp},
	}
	if r.servers[server.KeyStockMC] != nil {
		plans = append(plans, perf.Plan{Name: perf.TestMC, Targets: pick(server.KeyOursMC, server.KeyStockMC, server.KeyFloor), Spec: mc})
	}
	plans = append(plans, perf.Plan{Name: perf.TestSaturated, Targets: pick(server.KeyOurs, server.KeyStock, server.KeyFloor), Spec: sat})
	// Calibration: each fixed-load test's targets saturated once (also the
	// warm-up); the fixed load is half the slowest.
	p.Rates, p.Calibration = map[string]int{}, map[string]map[string]float64{}
	given := map[string]int{perf.TestMixed: cfg.qps, perf.TestTCP: cfg.tcpQPS, perf.TestMC: cfg.qps}
	for i := range plans {
		if plans[i].Name == perf.TestSaturated {
			continue
		}
		if err := perf.Calibrate(ctx, cfg.Settings, &plans[i], given[plans[i].Name], p); err != nil {
			return nil, err
		}
	}
	for _, pl := range plans {
		r.res.Commands[pl.Name] = pl.Spec.Command(cfg.Settings)
	}
	return plans, nil
}

// runRounds calibrates, then runs the rounds.
func (r *shapeRun) runRounds(ctx context.Context) ([]perf.Plan, error) {
	plans, err := r.plans(ctx)
	if err != nil {
		return nil, err
	}
	return plans, perf.RunRounds(ctx, r.cfg.Settings, plans, r.sr.Perf)
}

// profiles runs each fixed-load test once more on its Kubernetes targets
// while the server records a CPU profile (-profile): what the hot path
// spends its time on, outside the figures.
func (r *shapeRun) profiles(ctx context.Context, plans []perf.Plan) error {
	if r.cfg.profile == "" {
		return nil
	}
	if err := os.MkdirAll(r.cfg.profile, 0o755); err != nil {
		return err
	}
	for _, pl := range plans {
		if pl.Name == perf.TestSaturated {
			continue
		}
		for _, s := range pl.Targets { // the floor too: what ours costs beyond it
			path := filepath.Join(r.cfg.profile, fmt.Sprintf("%s-%s-%s.cpu.pprof", r.sr.Shape.Name, pl.Name, s.Key))
			if err := perf.ProfileRun(ctx, r.cfg.Settings, s, pl.Spec, path); err != nil {
				return err
			}
			logf("CPU profile of %s during %s: %s", s, pl.Name, path)
		}
	}
	return nil
}

// heapProfile saves s's heap profile after sync (-profile).
func (r *shapeRun) heapProfile(s *server.Server) error {
	return server.SaveHeapProfile(r.cfg.profile, r.sr.Shape.Name, s)
}

// goBench runs the in-process benchmark against the shape's data.
func (r *shapeRun) goBench(ctx context.Context) error {
	bin, err := r.inprocess()
	if err != nil {
		return err
	}
	logf("in-process benchmark (go test -bench, benchtime %s)", r.cfg.Benchtime)
	r.res.GoBenchCommand = fmt.Sprintf("cd bench && go test -c -o inprocess.test ./inprocess && "+
		"SCHEMADNS_BENCH_KUBECONFIG=... SCHEMADNS_BENCH_CASES=cases.txt SCHEMADNS_BENCH_MIX=mix.txt "+
		"taskset -c %d ./inprocess.test %s",
		r.cfg.ServerCPU, strings.Join(perf.GoBenchArgs(r.cfg.Settings), " "))
	r.sr.Perf.GoBench, err = perf.RunInprocess(ctx, r.cfg.Settings, bin, r.cluster.Kubeconfig, r.files.cases, r.files.mix)
	return err
}

const mib = 1 << 20
