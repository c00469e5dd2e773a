package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/clustershape"
	"github.com/schemadns/schemadns/internal/kubeapi"
	"github.com/schemadns/schemadns/internal/procstat"
	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// results are everything the report is written from (docs/overload.json).
type results struct {
	Started, Finished time.Time
	Command           string
	Note              string
	Machine           toolreport.Machine
	Shape             string
	Servers           map[string]string // key → label
	External          float64
	Clients           int
	Duration, Timeout string
	Warmup            string
	Pinning           string
	// Saturation is ours's saturation rate, q/s, and how it was found.
	Saturation  int
	Calibration []calibrationStep
	Runs        []*runResult
	Sockets     []*socketResult
}

// runResult is one server at one offered load against one upstream.
type runResult struct {
	Server, Upstream string
	Multiple         float64
	Rate             int
	Load             *loadResult
	P50, P90, P99    float64 // ms, answered cluster queries
	// P99Settled is the p99 of those sent a second or more into the load.
	P99Settled float64
	Watch      watched
	RSSBefore  int64
	Recovery   float64 // seconds from the load's end
	Crashed    string  `json:",omitempty"`
	// OtherBusy is the share of the server's CPU that other processes used
	// during the load: the noise of a shared machine.
	OtherBusy float64
	// The upstream's count of queries it received during the run.
	UpstreamQueries int64
	Shed            map[string]float64 `json:",omitempty"` // drop counters from the server's metrics
}

type calibrationStep struct {
	Rate      int
	Answered  float64 // share of offered queries answered
	PerSecond float64 // queries answered a second
	P99       float64
}

func run(ctx context.Context, cfg *config, args []string) error {
	if err := checkTools(); err != nil {
		return err
	}
	var err error
	if cfg.work, err = os.MkdirTemp("", "schemadns-overload-"); err != nil {
		return err
	}
	if cfg.Keep {
		logf("work directory (kept): %s", cfg.work)
	} else {
		defer os.RemoveAll(cfg.work)
	}
	res := &results{Started: time.Now(), Command: "make overload" + argsText(args), Note: cfg.Note,
		Machine: toolreport.ReadMachine(cfg.CoreDNS), External: cfg.external, Clients: cfg.clients,
		Duration: cfg.duration.String(), Timeout: cfg.timeout.String(), Warmup: cfg.warmup.String(), Servers: map[string]string{},
		Pinning: fmt.Sprintf("server on CPU %d (GOMAXPROCS 1), the load, the stub upstream and the watch on CPU %d", cfg.serverCPU, cfg.clientCPU)}
	for _, k := range cfg.servers {
		res.Servers[k] = serverConfigs(cfg.Root)[k].Label
	}
	layout, stop, err := cluster(ctx, cfg)
	if err != nil {
		return err
	}
	defer stop()
	if cfg.clusterOnly {
		logf("the shape is loaded: go run ./overload -kubeconfig %s ...; interrupt to stop", cfg.kubeconfig)
		<-ctx.Done()
		return nil
	}
	res.Shape = layout.Describe()
	// This process, and the API server and etcd it started, keep off the
	// server's CPU.
	if err := pinTree(os.Getpid(), strconv.Itoa(cfg.clientCPU)); err != nil {
		return err
	}
	pool := newQueryPool(layout)
	m := &measurer{cfg: cfg, pool: pool, probe: pool.names[0]}
	if err := m.measureAll(ctx, res); err != nil {
		return err
	}
	res.Finished = time.Now()
	return writeReport(cfg, res)
}

// cluster is the shape's layout and the API server that holds it: one
// started and loaded here, or the one -kubeconfig names (stop then does
// nothing).
func cluster(ctx context.Context, cfg *config) (*clustershape.Layout, func(), error) {
	if cfg.kubeconfig != "" {
		l, err := shapeOf(cfg).Layout()
		return l, func() {}, err
	}
	c, l, err := startCluster(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return l, func() { c.Stop() }, nil
}

// shapeOf is S1 at the run's scale.
func shapeOf(cfg *config) clustershape.Shape {
	if cfg.Scale == "small" {
		return clustershape.S1().Scaled(0.1)
	}
	return clustershape.S1()
}

// startCluster starts the API server and loads S1 into it.
func startCluster(ctx context.Context, cfg *config) (*kubeapi.Cluster, *clustershape.Layout, error) {
	log, err := os.Create(filepath.Join(cfg.work, "kubeapi.log"))
	if err != nil {
		return nil, nil, err
	}
	c, err := kubeapi.Start(ctx, kubeapi.Options{Log: log, ReadyTimeout: 5 * time.Minute})
	if err != nil {
		return nil, nil, err
	}
	l, err := shapeOf(cfg).Layout()
	if err == nil {
		logf("loading %s", l.Describe())
		_, err = clustershape.Load(ctx, c.RESTConfig(), l, clustershape.LoadOptions{Writers: cfg.Loaders,
			Progress: func(p clustershape.Progress) { logf("  loading: %s", p) }, ProgressEvery: 30 * time.Second})
	}
	if err != nil {
		c.Stop()
		return nil, nil, err
	}
	cfg.kubeconfig = c.Kubeconfig
	return c, l, nil
}

// queryPool's cluster names are every service's, shuffled with a fixed
// seed; names is the same as text.
func newQueryPool(l *clustershape.Layout) *queryPool {
	p := &queryPool{}
	n := l.Counts().Services
	order := rand.New(rand.NewPCG(1, 31)).Perm(n)
	for _, i := range order {
		svc := l.Service(i)
		if svc.Spec.Type == "ExternalName" {
			continue
		}
		name := svc.Name + "." + svc.Namespace + ".svc.cluster.local."
		p.names = append(p.names, name)
		p.cluster = append(p.cluster, packQuery(name))
	}
	const ext = "x00000000.overload.test."
	p.external = packQuery(ext)
	p.counterAt = 13 // the header (12) and the label's length byte
	return p
}

func packQuery(name string) []byte {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.RecursionDesired = true
	wire, err := m.Pack()
	if err != nil {
		panic(err) // names made here
	}
	return wire
}

// measurer runs the configurations.
type measurer struct {
	cfg   *config
	pool  *queryPool
	probe string // a cluster name: start-up and recovery probes
}

func (m *measurer) measureAll(ctx context.Context, res *results) error {
	res.Saturation = m.cfg.saturation
	if res.Saturation == 0 {
		var err error
		if res.Saturation, res.Calibration, err = m.calibrate(ctx); err != nil {
			return err
		}
	}
	logf("ours's saturation: %d q/s", res.Saturation)
	for _, up := range m.cfg.upstreams {
		st, err := startStub(up)
		if err != nil {
			return err
		}
		for _, mult := range m.cfg.multiples {
			for _, key := range m.cfg.servers {
				r, err := m.measure(ctx, key, st, up, mult, int(mult*float64(res.Saturation)))
				if err != nil {
					st.close()
					return err
				}
				res.Runs = append(res.Runs, r)
			}
		}
		st.close()
	}
	if m.cfg.sockets {
		var err error
		if res.Sockets, err = m.measureSockets(ctx, res.Saturation); err != nil {
			return err
		}
	}
	return nil
}

// calibrate finds ours's saturation: the most queries a second it answers
// however many more are offered, on deploy/base's Corefile without
// clusterfirst (whose shedding would stop the ramp early), the upstream
// slow.
func (m *measurer) calibrate(ctx context.Context) (int, []calibrationStep, error) {
	st, err := startStub(upstreamSlow)
	if err != nil {
		return 0, nil, err
	}
	defer st.close()
	s, err := m.start(ctx, serverConfigs(m.cfg.Root)[keyOursPlain], "calibration", st, 0, strconv.Itoa(m.cfg.serverCPU))
	if err != nil {
		return 0, nil, err
	}
	defer stopServer(s)
	return m.ramp(ctx, s, 5000)
}

// ramp raises the load on s by a quarter each step from rate until the
// answers a second grow by less than 5% (the server's CPU is spent), and
// gives the most answers a second it saw: queries answered within the
// timeout, whatever their rcode.
func (m *measurer) ramp(ctx context.Context, s *server, rate int) (int, []calibrationStep, error) {
	var steps []calibrationStep
	best := 0.0
	for ; rate < 2_000_000; rate = rate * 5 / 4 {
		r, err := runLoad(ctx, m.spec(s, rate, 3*time.Second))
		if err != nil {
			return 0, nil, err
		}
		answered := float64(r.Answered[kindCluster] + r.Answered[kindExternal])
		step := calibrationStep{Rate: rate, Answered: answered / float64(max(r.Offered, 1)), PerSecond: answered / r.Seconds,
			P99: r.latency.quantile(0.99)}
		steps = append(steps, step)
		logf("  ramp: %d q/s offered, %.0f answered a second (%.2f%%), p99 %.2f ms", rate, step.PerSecond, 100*step.Answered, step.P99)
		if step.PerSecond < 1.05*best {
			break
		}
		best = max(best, step.PerSecond)
	}
	return int(best), steps, nil
}

func (m *measurer) spec(s *server, rate int, d time.Duration) loadSpec {
	return loadSpec{server: netip.MustParseAddrPort(s.addr()), rate: rate, duration: d, external: m.cfg.external,
		clients: m.cfg.clients, timeout: m.cfg.timeout, queries: m.pool}
}

// start runs a configuration and waits until it serves, then warms it
// with light load.
func (m *measurer) start(ctx context.Context, sc serverConfig, tag string, st *stub, procs int, cpus string) (*server, error) {
	s, err := startServer(m.cfg, sc, tag, st.addr(), procs, cpus)
	if err != nil {
		return nil, err
	}
	if err := s.waitServing(ctx, m.probe, 2*time.Minute); err != nil {
		stopServer(s)
		return nil, err
	}
	if _, err := runLoad(ctx, m.spec(s, 2000, m.cfg.warmup)); err != nil {
		stopServer(s)
		return nil, err
	}
	return s, nil
}

// stopServer kills the server at once: a graceful stop waits out the
// lameduck, which measures nothing here.
func stopServer(s *server) {
	_ = syscall.Kill(s.pid(), syscall.SIGKILL)
	s.Stop()
}

// measure is one run: the server started afresh, the load with the watch
// on, and the recovery after it.
func (m *measurer) measure(ctx context.Context, key string, st *stub, up string, mult float64, rate int) (*runResult, error) {
	tag := fmt.Sprintf("%s-%s-%gx", key, up, mult)
	logf("%s: %d q/s", tag, rate)
	s, err := m.start(ctx, serverConfigs(m.cfg.Root)[key], tag, st, 0, strconv.Itoa(m.cfg.serverCPU))
	if err != nil {
		return nil, err
	}
	defer stopServer(s)
	r := &runResult{Server: key, Upstream: up, Multiple: mult, Rate: rate}
	r.RSSBefore, _, _ = procstat.RSS(s.pid())
	upstream0 := st.received.Load()
	cpu0, _ := procstat.CPUSeconds(s.pid())
	busy0, _ := procstat.CPUBusy(m.cfg.serverCPU)
	w := startWatch(s)
	spec := m.spec(s, rate, m.cfg.duration)
	recovered := make(chan time.Duration, 1)
	spec.onEnd = func(end time.Time) {
		go func() { recovered <- recovery(ctx, s.addr(), m.probe, end) }()
	}
	r.Load, err = runLoad(ctx, spec)
	if err != nil {
		w.stop()
		return nil, err
	}
	cpu1, _ := procstat.CPUSeconds(s.pid())
	busy1, _ := procstat.CPUBusy(m.cfg.serverCPU)
	// The load and the wait for its last answers.
	r.OtherBusy = max(0, (busy1-busy0)-(cpu1-cpu0)) / (r.Load.Seconds + m.cfg.timeout.Seconds())
	r.Recovery = (<-recovered).Seconds()
	w.stop()
	r.Watch = w.result()
	r.UpstreamQueries = st.received.Load() - upstream0
	r.P50, r.P90, r.P99 = r.Load.latency.quantile(0.5), r.Load.latency.quantile(0.9), r.Load.latency.quantile(0.99)
	r.P99Settled = r.Load.settled.quantile(0.99)
	if !s.Alive() {
		r.Crashed = "exited; see " + s.logPath
	} else {
		r.Shed, _ = dropCounters(ctx, s)
	}
	logf("  cluster %.0f/s good (p50 %.2f, p99 %.2f ms, settled %.2f), external %.0f/s good, rcodes %v %v, RSS %s → %s, goroutines %d, health max %.3fs, recovery %.3fs, drops %v, other %.0f%%",
		float64(r.Load.Good[kindCluster])/r.Load.Seconds, r.P50, r.P99, r.P99Settled, float64(r.Load.Good[kindExternal])/r.Load.Seconds,
		r.Load.Rcodes[kindCluster], r.Load.Rcodes[kindExternal], toolreport.MiB(r.RSSBefore), toolreport.MiB(r.Watch.RSSPeak),
		r.Watch.GoroutinesPeak, r.Watch.HealthMax, r.Recovery, r.Shed, 100*r.OtherBusy)
	return r, nil
}

// pinTree puts pid and every process it started (and theirs) on the CPUs
// of list.
func pinTree(pid int, list string) error {
	if err := setAffinity(pid, list); err != nil {
		return err
	}
	for _, child := range children(pid) {
		if err := pinTree(child, list); err != nil {
			return err
		}
	}
	return nil
}

// children are the processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command (in parentheses): state, ppid.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// checkTools checks what the run needs besides Go.
func checkTools() error {
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("taskset (util-linux) is needed: %w", err)
	}
	return nil
}

// setAffinity puts every thread of pid on the CPUs of list.
func setAffinity(pid int, list string) error {
	if out, err := exec.Command("taskset", "-a", "-p", "-c", list, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("taskset -a -p -c %s %d: %w: %s", list, pid, err, out)
	}
	return nil
}

func argsText(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return " OVERLOADFLAGS=" + toolflags.ShellJoin(args)
}
