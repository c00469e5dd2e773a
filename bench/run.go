package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/test/kubeapi"
)

// The tests of a round, in the order they run. Each target of a test runs
// once per round, in target order: A B C A B C ...
const (
	testMixed     = "mixed"     // the cluster mix over UDP at a fixed load
	testTCP       = "tcp"       // the largest headless service over TCP at a fixed load
	testMC        = "mc"        // the clusterset.local mix over UDP at a fixed load
	testSaturated = "saturated" // the cluster mix over UDP, as fast as dnsperf sends
)

// results are everything the report is written from (and docs/benchmarks.json).
type results struct {
	Started, Finished time.Time
	Command           string
	Note              string
	Machine           machine
	Rounds            int
	Duration          string
	SatDuration       string
	Changes           int
	Benchtime         string
	Pinning           string
	Mix, MCMix        string
	Commands          map[string]string // test → the dnsperf command
	GoBenchCommand    string
	Multicluster      string // "measured", or why D is missing
	Targets           map[string]string
	Scales            []*scaleResult
	Errors            []string
}

// scaleResult are the figures at one scale.
type scaleResult struct {
	Services, Headless, Endpoints, Pods, Imports int
	HeadlessSizes                                []int
	SyncSeconds                                  map[string]float64
	Memory                                       map[string]memory
	Rates                                        map[string]int                     // test → offered load, q/s
	Calibration                                  map[string]map[string]float64      // test → target → saturated q/s
	Runs                                         map[string]map[string][]perfResult // test → target → one per round
	Order                                        map[string][]string                // test → its targets in round order
	CrossCheck                                   []crossCheck
	Latency                                      map[string]latencyResult
	LatencyPaired                                pairedLatency
	GoBench                                      []goBench
}

// env is one run's state.
type env struct {
	cfg       *config
	work      string
	cluster   *kubeapi.Cluster
	fix       *fixture
	changes   *changer
	res       *results
	inprocess func() (string, error) // the benchmark binary, once built
	mc        string                 // "", or why multicluster (D) is not measured
}

func run(ctx context.Context, cfg *config, args []string) error {
	if err := checkTools(cfg); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "schemadns-bench-")
	if err != nil {
		return err
	}
	if cfg.keep {
		logf("work directory (kept): %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	e := &env{cfg: cfg, work: work, res: newResults(cfg, args)}
	type built struct {
		bin string
		err error
	}
	buildc := make(chan built, 1)
	go func() { bin, err := buildInprocess(ctx, cfg, work); buildc <- built{bin, err} }()
	e.inprocess = sync.OnceValues(func() (string, error) { b := <-buildc; return b.bin, b.err })

	runErr := e.measure(ctx)
	if runErr != nil {
		e.res.Errors = append(e.res.Errors, runErr.Error())
	}
	e.res.Finished, e.res.Machine.LoadEnd = time.Now(), loadavg()
	if len(e.res.Scales) == 0 {
		return runErr
	}
	if err := writeReport(cfg, e.res); err != nil {
		return errors.Join(runErr, err)
	}
	logf("wrote %s", filepath.Join(cfg.outDir, "benchmarks.md"))
	return runErr
}

// checkTools fails early, with the fix, when a tool is missing.
func checkTools(cfg *config) error {
	need := []string{"dnsperf", "go"}
	if cfg.pin {
		need = append(need, "taskset")
	}
	for _, t := range need {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found: run bench/deps.sh (make bench does)", t)
		}
	}
	if _, err := os.Stat(cfg.coredns); err != nil {
		return fmt.Errorf("%w: run make build (make bench does)", err)
	}
	return nil
}

func newResults(cfg *config, args []string) *results {
	pinning := "none (-pin=false)"
	if cfg.pin {
		pinning = fmt.Sprintf("taskset: every DNS server process and the in-process benchmark on CPU %d (so GOMAXPROCS=1 for all), dnsperf on CPU %d", cfg.serverCPU, cfg.clientCPU)
	}
	return &results{
		Started: time.Now(), Command: "cd bench && go run . " + shellJoin(args), Note: cfg.note,
		Machine: readMachine(), Rounds: cfg.rounds, Duration: cfg.duration.String(), SatDuration: cfg.satDuration.String(),
		Changes: cfg.changes, Benchtime: cfg.benchtime, Pinning: pinning, Commands: map[string]string{},
		Targets: map[string]string{}, Multicluster: "measured",
	}
}

// measure starts the API server, loads each scale and measures it.
func (e *env) measure(ctx context.Context) error {
	logf("starting etcd and kube-apiserver")
	logFile, err := os.Create(filepath.Join(e.work, "kubeapi.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	c, err := kubeapi.Start(ctx, kubeapi.Options{Log: logFile, ReadyTimeout: 3 * time.Minute})
	if err != nil {
		return err
	}
	defer c.Stop()
	e.cluster = c
	if e.fix, err = newFixture(e.cfg, c); err != nil {
		return err
	}
	if err := e.fix.loadBase(ctx); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if e.changes, err = e.fix.setupLatency(ctx); err != nil {
		return fmt.Errorf("latency services: %w", err)
	}
	for _, n := range e.cfg.services {
		sr := &scaleResult{Services: n}
		err := e.measureScale(ctx, sr)
		if sr.Pods > 0 || err == nil {
			e.res.Scales = append(e.res.Scales, sr)
		}
		if err != nil {
			return fmt.Errorf("at %d services: %w", n, err)
		}
	}
	return nil
}

// scaleFiles are the query files of one scale.
type scaleFiles struct{ mix, mc, cases string }

// measureScale loads the fixture up to sr.Services and runs every test.
func (e *env) measureScale(ctx context.Context, sr *scaleResult) error {
	n := sr.Services
	logf("scale %d services: loading", n)
	if err := e.fix.load(ctx, n); err != nil {
		return err
	}
	f := e.fix
	sr.Headless, sr.Pods, sr.Imports, sr.HeadlessSizes = len(f.headless), f.pods, f.importsN, f.bigSizes
	sr.Endpoints = n * e.cfg.endpoints
	for _, s := range f.bigSizes {
		sr.Endpoints += s
	}
	files, err := e.writeFiles(n)
	if err != nil {
		return err
	}
	servers, err := e.startServers(ctx, sr)
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	if err != nil {
		return err
	}
	byKey := map[string]*server{}
	for _, s := range servers {
		byKey[s.Key] = s
		e.res.Targets[s.Key] = s.Label
	}
	sr.CrossCheck = e.crossChecks(byKey, files)
	plans, err := e.runRounds(ctx, sr, byKey, files)
	if err != nil {
		return err
	}
	if err := e.profiles(ctx, sr, plans); err != nil {
		return err
	}
	logf("programming latency: %d changes", e.cfg.changes)
	if sr.Latency, sr.LatencyPaired, err = measureLatency(ctx, e.changes, []*server{byKey["A"], byKey["B"]}, n, e.cfg.changes); err != nil {
		return fmt.Errorf("programming latency: %w", err)
	}
	for _, s := range servers {
		s.stop()
	}
	return e.goBench(ctx, sr, files)
}

// writeFiles writes the query files of scale n.
func (e *env) writeFiles(n int) (scaleFiles, error) {
	p := func(name string) string { return filepath.Join(e.work, fmt.Sprintf("%d-%s", n, name)) }
	files := scaleFiles{mix: p("mix.txt"), mc: p("multicluster.txt"), cases: p("cases.txt")}
	mix, mcMix := e.fix.clusterMix(), e.fix.multiclusterMix()
	e.res.Mix, e.res.MCMix = mixDescription(mix), mixDescription(mcMix)
	big := e.fix.big[len(e.fix.big)-1]
	bigQ := query{kind: fmt.Sprintf("%s A over TCP", big.name), name: big.name + "." + big.ns + ".svc.cluster.local.", qtype: dns.TypeA, expect: "answer", tcp: true}
	cases := append(samples(mix), bigQ)
	return files, errors.Join(
		writeQueries(files.mix, generate(mix, mixLines)),
		writeQueries(files.mc, generate(mcMix, mixLines)),
		writeCases(files.cases, cases),
	)
}

// targets are the servers of this run, in round order.
func (e *env) targets() []target {
	ts := []target{targetA, targetB, targetC}
	if e.cfg.multicluster != "off" {
		ts = append(ts, targetD, targetE)
	}
	return ts
}

// startServers starts the targets one after the other, each waited for
// until it has synced, and reads the memory of each after sync.
func (e *env) startServers(ctx context.Context, sr *scaleResult) ([]*server, error) {
	sr.SyncSeconds, sr.Memory = map[string]float64{}, map[string]memory{}
	var servers []*server
	for _, t := range e.targets() {
		if t.Key == "D" && e.mc != "" {
			continue
		}
		s, err := startServer(e, t, sr.Services)
		if err != nil {
			return servers, err
		}
		servers = append(servers, s)
		if err := e.waitServer(ctx, s); err != nil {
			return servers, err
		}
		if t.Key == "D" && e.mc != "" { // the plugin is not there yet
			s.stop()
			servers = servers[:len(servers)-1]
			continue
		}
		sr.SyncSeconds[t.Key] = s.syncTime.Seconds()
		if t.kube {
			time.Sleep(2 * time.Second) // let the first burst of work settle
			if sr.Memory[t.Key], err = s.readMemory(); err != nil {
				return servers, err
			}
			if err := e.heapProfile(s, sr.Services); err != nil {
				return servers, err
			}
		}
		logf("%s synced in %s", s, s.syncTime.Round(time.Millisecond))
	}
	return servers, nil
}

// waitServer waits until s answers its sentinels. For D it first checks
// that the multicluster plugin serves clusterset.local at all.
func (e *env) waitServer(ctx context.Context, s *server) error {
	const within = 10 * time.Minute
	if !s.kube {
		// whoami answers in the Additional section: any NOERROR will do.
		return s.waitSynced(ctx, []sentinel{{name: "whoami.bench.", qtype: dns.TypeA}}, within)
	}
	if err := s.waitSynced(ctx, e.clusterSentinels(), within); err != nil {
		return err
	}
	if !s.mc {
		return nil
	}
	if s.Key == "D" {
		r, err := exchange(s.addr(), false, "dns-version.clusterset.local.", dns.TypeTXT)
		if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			// TODO(multicluster): when plugin/multicluster serves the MCS
			// schema (issue 6), this check passes and D is measured with
			// no other change here.
			e.mc = "plugin/multicluster does not serve clusterset.local yet (dns-version.clusterset.local TXT unanswered): D not measured"
			if e.cfg.multicluster == "on" {
				return errors.New(e.mc)
			}
			e.res.Multicluster = e.mc
			logf("%s", e.mc)
			return nil
		}
	}
	return s.waitSynced(ctx, e.mcSentinels(), within)
}

// clusterSentinels are the cluster.local objects loaded last, the largest
// headless service whole, and the latency services.
func (e *env) clusterSentinels() []sentinel {
	f := e.fix
	name := func(s svcRef) string { return s.name + "." + s.ns + ".svc.cluster.local." }
	cips, hls := sortedRefs(f.clusterIPs), sortedRefs(f.headless)
	big := f.big[len(f.big)-1]
	out := []sentinel{
		{name: name(cips[len(cips)-1]), qtype: dns.TypeA, min: 1},
		{name: name(big), qtype: dns.TypeA, tcp: true, min: f.bigSizes[len(f.bigSizes)-1]},
	}
	if len(hls) > 0 {
		out = append(out, sentinel{name: name(hls[len(hls)-1]), qtype: dns.TypeA, min: e.cfg.endpoints})
	}
	if f.pods > 0 {
		out = append(out, sentinel{name: f.podName(f.pods - 1), qtype: dns.TypeA, min: 1})
	}
	return append(out, e.changes.sentinels()...)
}

// mcSentinels are the imports loaded last, of each type.
func (e *env) mcSentinels() []sentinel {
	var out []sentinel
	seen := map[bool]bool{}
	imps := sortedRefs(e.fix.imports)
	for i := len(imps) - 1; i >= 0 && len(seen) < 2; i-- {
		headless := imps[i].ip == ""
		if !seen[headless] {
			seen[headless] = true
			out = append(out, sentinel{name: imps[i].name + "." + imps[i].ns + ".svc.clusterset.local.", qtype: dns.TypeA, min: 1})
		}
	}
	return out
}

// testPlan is one test: which targets, and its dnsperf run at a fixed load
// (the saturated test has qps 0).
type testPlan struct {
	name    string
	targets []*server
	spec    perfSpec
}

// plans are the tests of a round at scale sr, with the rates set.
func (e *env) plans(ctx context.Context, sr *scaleResult, by map[string]*server, files scaleFiles) ([]testPlan, error) {
	pick := func(keys ...string) []*server {
		var out []*server
		for _, k := range keys {
			if s := by[k]; s != nil {
				out = append(out, s)
			}
		}
		return out
	}
	cfg := e.cfg
	mixed := perfSpec{file: files.mix, duration: cfg.duration, clients: 4, outstanding: 100, verbose: true}
	big := e.fix.big[len(e.fix.big)-1]
	tcp := perfSpec{tcp: true, tcpName: big.name + "." + big.ns + ".svc.cluster.local.", tcpMin: e.fix.bigSizes[len(e.fix.bigSizes)-1],
		duration: cfg.duration, clients: 4}
	mc := perfSpec{file: files.mc, duration: cfg.duration, clients: 4, outstanding: 100, verbose: true}
	sat := perfSpec{file: files.mix, duration: cfg.satDuration, clients: 8, outstanding: 500}
	plans := []testPlan{
		{testMixed, pick("A", "B", "C"), mixed},
		{testTCP, pick("A", "B"), tcp},
	}
	if by["E"] != nil {
		plans = append(plans, testPlan{testMC, pick("D", "E", "C"), mc})
	}
	plans = append(plans, testPlan{testSaturated, pick("A", "B", "C"), sat})
	// Calibration: each fixed-load test's targets saturated once (also the
	// warm-up); the fixed load is half the slowest.
	sr.Rates, sr.Calibration = map[string]int{}, map[string]map[string]float64{}
	given := map[string]int{testMixed: cfg.qps, testTCP: cfg.tcpQPS, testMC: cfg.qps}
	for i := range plans {
		p := &plans[i]
		if p.name == testSaturated {
			continue
		}
		calib := p.spec
		calib.qps, calib.duration, calib.verbose = 0, cfg.satDuration, false
		calib.outstanding *= 4
		calib.clients *= 2
		sr.Calibration[p.name] = map[string]float64{}
		slowest := math.Inf(1)
		for _, s := range p.targets {
			r, err := runPerf(ctx, cfg, s, calib)
			if err != nil {
				return nil, fmt.Errorf("calibrate %s: %w", p.name, err)
			}
			sr.Calibration[p.name][s.Key] = r.QPS
			slowest = min(slowest, r.QPS)
		}
		p.spec.qps = given[p.name]
		if p.spec.qps == 0 {
			p.spec.qps = roundDown(slowest / 2)
		}
		sr.Rates[p.name] = p.spec.qps
		logf("%s: saturated %v q/s; fixed load %d q/s", p.name, roundMap(sr.Calibration[p.name]), p.spec.qps)
	}
	for _, p := range plans {
		e.res.Commands[p.name] = p.spec.command(cfg)
	}
	return plans, nil
}

// roundDown keeps two significant digits, at least 100.
func roundDown(x float64) int {
	if x < 100 {
		return 100
	}
	unit := math.Pow(10, math.Floor(math.Log10(x))-1)
	return int(math.Floor(x/unit) * unit)
}

func roundMap(m map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = int(v)
	}
	return out
}

// runRounds calibrates, then runs the rounds: in each, every test on each
// of its targets in turn.
func (e *env) runRounds(ctx context.Context, sr *scaleResult, by map[string]*server, files scaleFiles) ([]testPlan, error) {
	plans, err := e.plans(ctx, sr, by, files)
	if err != nil {
		return nil, err
	}
	sr.Runs, sr.Order = map[string]map[string][]perfResult{}, map[string][]string{}
	for _, p := range plans {
		for _, s := range p.targets {
			sr.Order[p.name] = append(sr.Order[p.name], s.Key)
		}
	}
	for round := 1; round <= e.cfg.rounds; round++ {
		for _, p := range plans {
			if sr.Runs[p.name] == nil {
				sr.Runs[p.name] = map[string][]perfResult{}
			}
			var line []string
			for _, s := range p.targets {
				r, err := runPerf(ctx, e.cfg, s, p.spec)
				if err != nil {
					return nil, fmt.Errorf("round %d %s: %w", round, p.name, err)
				}
				sr.Runs[p.name][s.Key] = append(sr.Runs[p.name][s.Key], r)
				line = append(line, fmt.Sprintf("%s %.1fµs/q %.0fq/s", s.Key, r.CPUPerQuery, r.QPS))
			}
			logf("round %d/%d %-9s %s", round, e.cfg.rounds, p.name, strings.Join(line, ", "))
		}
	}
	return plans, nil
}

// profiles runs each fixed-load test once more on its Kubernetes targets
// while the server records a CPU profile (-profile): what the hot path
// spends its time on, outside the figures.
func (e *env) profiles(ctx context.Context, sr *scaleResult, plans []testPlan) error {
	if e.cfg.profile == "" {
		return nil
	}
	if err := os.MkdirAll(e.cfg.profile, 0o755); err != nil {
		return err
	}
	for _, p := range plans {
		if p.name == testSaturated {
			continue
		}
		for _, s := range p.targets {
			if !s.kube {
				continue
			}
			path := filepath.Join(e.cfg.profile, fmt.Sprintf("%d-%s-%s-%s.cpu.pprof", sr.Services, p.name, s.Key, strings.ReplaceAll(s.Name, " ", "-")))
			if err := profileRun(ctx, e.cfg, s, p.spec, path); err != nil {
				return err
			}
			logf("CPU profile of %s during %s: %s", s, p.name, path)
		}
	}
	return nil
}

// heapProfile saves s's heap profile after sync (-profile).
func (e *env) heapProfile(s *server, scale int) error {
	if e.cfg.profile == "" {
		return nil
	}
	if err := os.MkdirAll(e.cfg.profile, 0o755); err != nil {
		return err
	}
	body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", s.pprof))
	if err != nil {
		return fmt.Errorf("heap profile of %s: %w", s, err)
	}
	path := filepath.Join(e.cfg.profile, fmt.Sprintf("%d-heap-%s-%s.pprof", scale, s.Key, strings.ReplaceAll(s.Name, " ", "-")))
	return os.WriteFile(path, []byte(body), 0o644)
}

// profileRun records s's CPU profile over one run of spec.
func profileRun(ctx context.Context, cfg *config, s *server, spec perfSpec, path string) error {
	secs := max(1, int(spec.duration.Seconds()))
	type got struct {
		body string
		err  error
	}
	done := make(chan got, 1)
	go func() {
		body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", s.pprof, secs))
		done <- got{body, err}
	}()
	if _, err := runPerf(ctx, cfg, s, spec); err != nil {
		return err
	}
	g := <-done
	if g.err != nil {
		return fmt.Errorf("CPU profile of %s: %w", s, g.err)
	}
	return os.WriteFile(path, []byte(g.body), 0o644)
}

// goBench runs the in-process benchmark against this scale's data.
func (e *env) goBench(ctx context.Context, sr *scaleResult, files scaleFiles) error {
	bin, err := e.inprocess()
	if err != nil {
		return err
	}
	logf("in-process benchmark (go test -bench, benchtime %s)", e.cfg.benchtime)
	e.res.GoBenchCommand = fmt.Sprintf("cd bench && go test -c -o inprocess.test ./inprocess && SCHEMADNS_BENCH_KUBECONFIG=... SCHEMADNS_BENCH_CASES=cases.txt SCHEMADNS_BENCH_MIX=mix.txt taskset -c %d ./inprocess.test %s",
		e.cfg.serverCPU, strings.Join(goBenchArgs(e.cfg), " "))
	sr.GoBench, err = runInprocess(ctx, e.cfg, bin, e.cluster.Kubeconfig, files.cases, files.mix)
	return err
}

// shellJoin quotes args for a shell where needed.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return !strings.ContainsRune(safeShell, r) }) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

const safeShell = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%"
