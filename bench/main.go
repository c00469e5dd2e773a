// Command bench measures kubeschema (and multicluster) against CoreDNS's
// stock kubernetes plugin, compiled into the same binary, and against the
// framework's floor, a server block whose only plugin is whoami, on the
// same data in one run, and writes the figures to docs/benchmarks.md,
// docs/benchmarks.svg and docs/benchmarks.json.
//
// For each cluster shape (internal/fixture) it starts a real etcd and
// kube-apiserver on loopback (internal/kubeapi), loads the shape with a
// parallel client-go loader, runs bin/coredns once per target with a
// generated Corefile, and measures memory, start-up and behaviour under
// EndpointSlice churn; on the default fixture also CPU per query (dnsperf
// and /proc), TCP answers, programming latency and in-process ServeDNS.
// On the Mesos shapes (internal/mesosbench) it measures mesosschema
// polling a stand-in Mesos master, against the stock file plugin serving
// the same records. `make bench` runs it; by hand:
//
//	cd bench && go run . -scale small -shapes S2
//
// Linux only: it reads /proc and pins processes with taskset.
//
// This package is the command: its flags, the run of each cluster shape
// (run.go), the threshold shape's runs and forced relist (thresholds.go,
// relist.go). The rest is in internal/: server (the targets and their
// processes), querymix, perf (load runs, rounds, latency, in-process),
// fixture (the cluster shapes and their loader), churn, mesosbench (the
// Mesos shapes), results (benchmarks.json) and report (the page).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/schemadns/schemadns/bench/internal/churn"
	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/mesosbench"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/report"
	"github.com/schemadns/schemadns/internal/toolflags"
)

// config is the command line.
type config struct {
	toolflags.Common
	shapes      []fixture.Shape
	mesos       []mesosbench.Shape
	starts      int
	qps, tcpQPS int
	changes     int
	// Settings are the CPU tests' and the servers' settings: rounds,
	// durations, the binary and the CPUs.
	perf.Settings
	multicluster bool
	profile      string
	rewrite      bool
	keepOthers   bool
	churn        churn.Config
	mesosOpts    mesosbench.Config
	// s5Writers are the threshold shape's loader's requests in flight.
	s5Writers int
}

// presets are the scales: flag values applied unless given on the command
// line. "default" is the scale the figures are stated at and the flags' own
// defaults; its shapes are in shapesAt.
var presets = map[string]map[string]string{
	"default": {},
	"small": {
		"rounds": "3", "duration": "4s", "sat-duration": "2s", "changes": "60", "benchtime": "300ms",
		"churn-duration": "15s", "mesos-changes": "8", "mesos-polls": "8",
	},
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var shapes string
	cfg.Register(fs, "benchmarks.md, .svg and .json", "Corefiles, logs, query files",
		"default (the shapes at full size) or small (a tenth of each, shorter runs)")
	fs.StringVar(&shapes, "shapes", "S1,S2,S3,S4,S5,M1,M2", "the shapes to measure, comma-separated: S1 ClusterIP-heavy, "+
		"S2 headless-heavy in one namespace, S3 the default fixture with pods (CPU, TCP and latency tests too), S4 fat services, "+
		"S5 the Kubernetes scalability thresholds (10k services, 150k pods; measured without the pod watch and with pods verified, "+
		"a forced relist of each server too); "+
		"M1 a Mesos cluster (mesosschema polling a stand-in master, against the stock file plugin), M2 the same at its most costly for DNS")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "rounds of the CPU tests; figures are medians over rounds")
	fs.IntVar(&cfg.starts, "starts", 3, "starts of kubeschema and of stock per shape, in turn, timed to their first complete answer (the figure is the median)")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each fixed-load run")
	fs.DurationVar(&cfg.SatDuration, "sat-duration", 3*time.Second, "length of each saturation run")
	fs.IntVar(&cfg.qps, "qps", 0, "offered load of the mixed runs, queries/s (0: half the slowest target's saturated rate)")
	fs.IntVar(&cfg.tcpQPS, "tcp-qps", 0, "offered load of the 1000-endpoint TCP runs (0: half the slowest target's saturated rate)")
	fs.IntVar(&cfg.changes, "changes", 200, "API changes timed for the programming latency")
	fs.StringVar(&cfg.Benchtime, "benchtime", "1s", "go test -benchtime of the in-process benchmarks")
	fs.IntVar(&cfg.ServerCPU, "server-cpu", 1, "CPU the DNS servers are pinned to")
	fs.IntVar(&cfg.ClientCPU, "client-cpu", 0, "CPU dnsperf is pinned to")
	fs.BoolVar(&cfg.Pin, "pin", true, "pin servers and dnsperf with taskset")
	fs.BoolVar(&cfg.multicluster, "multicluster", true, "also compare kubeschema+multicluster with stock+multicluster on the clusterset mix (S3)")
	fs.IntVar(&cfg.churn.Rate, "churn-rate", 1000, "EndpointSlice updates per second offered during the churn")
	fs.DurationVar(&cfg.churn.Duration, "churn-duration", time.Minute, "length of the churn, per shape")
	fs.IntVar(&cfg.churn.Writers, "churn-writers", 64, "concurrent writers of the churn (client-go, no client-side rate limit)")
	fs.IntVar(&cfg.churn.CheckRate, "check-rate", 2000, "queries/s the checker sends to each server during the churn")
	fs.IntVar(&cfg.s5Writers, "s5-writers", 256, "S5: requests in flight of its loader (clustershape.Load); the admin user is exempt from "+
		"the API server's priority and fairness limits, and more writers than its CPUs can serve only queue there")
	fs.IntVar(&cfg.mesosOpts.Changes, "mesos-changes", 20, "Mesos shapes: state changes timed from the poll that carries them to the first answer that shows them, for each kind of change")
	fs.IntVar(&cfg.mesosOpts.Polls, "mesos-polls", 20, "Mesos shapes: polls of each kind whose server CPU is measured")
	fs.Float64Var(&cfg.mesosOpts.Replace, "mesos-replace", 0.1, "Mesos shapes: the share of running tasks the large change replaces")
	fs.IntVar(&cfg.mesosOpts.QPS, "mesos-qps", 0, "Mesos shapes: offered load of the query mix, queries/s (0: half the slower target's saturated rate)")
	fs.BoolVar(&cfg.keepOthers, "keep-others", false, "keep the shapes this run does not measure from OUT/benchmarks.json, the page saying which run measured which (SHAPES=S5 beside an earlier full run)")
	fs.BoolVar(&cfg.rewrite, "rewrite", false, "measure nothing: write benchmarks.md and benchmarks.svg again from OUT/benchmarks.json")
	fs.StringVar(&cfg.profile, "profile", "", "write profiles to this directory: each Kubernetes target's heap after sync, "+
		"and each target's CPU (the floor's too) during one more fixed-load run of each test after the rounds; "+
		"on Mesos shapes the heap of mesosschema and file at rest and of the poller after the poll tests, "+
		"and the poller's CPU over a short series of unchanged and of one-task polls (none in the figures)")
	if err := cfg.Parse(fs, args, presets); err != nil {
		return nil, err
	}
	return cfg, cfg.finish(shapes)
}

// finish resolves paths and the shapes and checks the values.
func (cfg *config) finish(shapes string) error {
	var err error
	if cfg.shapes, cfg.mesos, err = pickShapes(cfg.Scale, shapes); err != nil {
		return fmt.Errorf("-shapes: %w", err)
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	cfg.Options.CoreDNS = cfg.CoreDNS
	switch {
	case cfg.Rounds < 1 || cfg.starts < 1:
		return errors.New("-rounds and -starts must be at least 1")
	case cfg.churn.Writers < 1 || cfg.s5Writers < 1:
		return errors.New("-churn-writers and -s5-writers must be at least 1")
	case cfg.churn.Rate < 1 || cfg.churn.CheckRate < 1 || cfg.churn.Duration <= 0:
		return errors.New("-churn-rate, -check-rate and -churn-duration must be positive")
	case cfg.mesosOpts.Changes < 1 || cfg.mesosOpts.Polls < 1:
		return errors.New("-mesos-changes and -mesos-polls must be at least 1")
	case cfg.mesosOpts.Replace <= 0 || cfg.mesosOpts.Replace > 1:
		return errors.New("-mesos-replace must be in (0, 1]")
	}
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "tcpload" {
		if err := perf.TCPLoadMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.rewrite {
		err = report.Rewrite(cfg.OutDir)
	} else {
		err = run(ctx, cfg, os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// logf prints progress with the time since start.
var logf = toolflags.Logf
