package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/bench/internal/server"
)

// The tests of the default fixture (the shape with Perf: S3), on the
// targets running after their starts: the answers compared, CPU per query
// in rounds, the programming latency, and the in-process benchmark after
// the churn.

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

func (r *shapeRun) crossChecks() []server.CrossCheck {
	by := r.servers
	out := []server.CrossCheck{server.Compare(by[server.KeyOurs], by[server.KeyStock], r.files.mix)}
	if by[server.KeyOursMC] != nil && by[server.KeyStockMC] != nil {
		out = append(out, server.Compare(by[server.KeyOursMC], by[server.KeyStockMC], r.files.mc))
	}
	for _, c := range out {
		logf("answers %s: %d of %d distinct queries differ", c.Pair, c.Differing, c.Compared)
	}
	return out
}
