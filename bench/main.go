// Command bench measures kubeschema (and multicluster) against CoreDNS's
// stock kubernetes plugin and against the framework's floor, a server block
// whose only plugin is whoami, on the same data in one run, and writes the
// figures to docs/benchmarks.md, docs/benchmarks.svg and docs/benchmarks.json.
//
// It starts a real etcd and kube-apiserver on loopback (test/kubeapi), loads
// a fixture with a parallel client-go loader, runs bin/coredns once per
// target with a generated Corefile, and measures with dnsperf, /proc and the
// servers' own metrics. `make bench` runs it; by hand:
//
//	cd bench && go run . -scale small
//
// Linux only: it reads /proc and pins processes with taskset.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	root, coredns, outDir string
	scale                 string
	services              []int
	headlessSizes         []int
	pods                  int
	endpoints             int
	headlessEvery         int
	perNamespace          int
	importsEvery          int
	rounds                int
	duration, satDuration time.Duration
	qps, tcpQPS           int
	changes               int
	benchtime             string
	serverCPU, clientCPU  int
	pin                   bool
	note                  string
	multicluster          string
	keep                  bool
	loaders               int
	profile               string
	rewrite               bool
}

// presets are the scales: flag values applied unless given on the command
// line. "default" is the scale and the flags' own defaults.
var presets = map[string]map[string]string{
	"default": {},
	"small": {
		"services": "1000", "pods": "2000", "rounds": "3",
		"duration": "4s", "sat-duration": "2s", "changes": "60", "benchtime": "300ms",
	},
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var services, headless string
	fs.StringVar(&cfg.root, "root", "..", "the repository's top directory")
	fs.StringVar(&cfg.coredns, "coredns", "", "the CoreDNS binary (default ROOT/bin/coredns)")
	fs.StringVar(&cfg.outDir, "out", "", "where the report goes (default ROOT/docs)")
	fs.StringVar(&cfg.scale, "scale", "default", "preset: default (1k and 10k services, 20k pods) or small (1k services, 2k pods, shorter runs)")
	fs.StringVar(&services, "services", "1000,10000", "the scales: services in the cluster, comma-separated, loaded one after the other")
	fs.StringVar(&headless, "headless-sizes", "10,100,1000", "endpoints of the extra headless services (the largest is queried over TCP)")
	fs.IntVar(&cfg.pods, "pods", 20000, "pods at the largest scale (smaller scales get their share), for pods verified")
	fs.IntVar(&cfg.endpoints, "endpoints", 10, "endpoints of every service (10k services x 10 = 100k endpoints)")
	fs.IntVar(&cfg.headlessEvery, "headless-every", 10, "every Nth service is headless")
	fs.IntVar(&cfg.perNamespace, "per-namespace", 100, "services per namespace")
	fs.IntVar(&cfg.importsEvery, "imports-every", 10, "one ServiceImport (multicluster) per N services")
	fs.IntVar(&cfg.rounds, "rounds", 5, "rounds of A B C ...; figures are medians over rounds")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "length of each fixed-load run")
	fs.DurationVar(&cfg.satDuration, "sat-duration", 3*time.Second, "length of each saturation run")
	fs.IntVar(&cfg.qps, "qps", 0, "offered load of the mixed runs, queries/s (0: half the slowest target's saturated rate)")
	fs.IntVar(&cfg.tcpQPS, "tcp-qps", 0, "offered load of the 1000-endpoint TCP runs (0: half the slowest target's saturated rate)")
	fs.IntVar(&cfg.changes, "changes", 200, "API changes timed for the programming latency, per scale")
	fs.StringVar(&cfg.benchtime, "benchtime", "1s", "go test -benchtime of the in-process benchmarks")
	fs.IntVar(&cfg.serverCPU, "server-cpu", 1, "CPU the DNS servers are pinned to")
	fs.IntVar(&cfg.clientCPU, "client-cpu", 0, "CPU dnsperf is pinned to")
	fs.BoolVar(&cfg.pin, "pin", true, "pin servers and dnsperf with taskset")
	fs.StringVar(&cfg.note, "note", "", "a line printed at the top of the report (for example the conditions of the run)")
	fs.StringVar(&cfg.multicluster, "multicluster", "auto", "multicluster comparison: auto (when plugin/multicluster serves clusterset.local), on, off")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the work directory (Corefiles, logs, query files)")
	fs.IntVar(&cfg.loaders, "loaders", 16, "parallel API requests of the fixture loader")
	fs.BoolVar(&cfg.rewrite, "rewrite", false, "measure nothing: write benchmarks.md and benchmarks.svg again from OUT/benchmarks.json")
	fs.StringVar(&cfg.profile, "profile", "", "write profiles to this directory: each Kubernetes target's heap after sync, and its CPU during one more fixed-load run of each test after the rounds (not in the figures)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	preset, ok := presets[cfg.scale]
	if !ok {
		return nil, fmt.Errorf("unknown -scale %q (default or small)", cfg.scale)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, value := range preset {
		if !given[name] {
			if err := fs.Set(name, value); err != nil {
				return nil, err
			}
		}
	}
	return cfg, cfg.finish(services, headless)
}

// finish resolves paths and list flags and checks the values.
func (cfg *config) finish(services, headless string) error {
	var err error
	if cfg.services, err = intList(services); err != nil {
		return fmt.Errorf("-services: %w", err)
	}
	if cfg.headlessSizes, err = intList(headless); err != nil {
		return fmt.Errorf("-headless-sizes: %w", err)
	}
	if cfg.root, err = filepath.Abs(cfg.root); err != nil {
		return err
	}
	if cfg.coredns == "" {
		cfg.coredns = filepath.Join(cfg.root, "bin", "coredns")
	}
	if cfg.outDir == "" {
		cfg.outDir = filepath.Join(cfg.root, "docs")
	}
	switch {
	case cfg.rounds < 1:
		return errors.New("-rounds must be at least 1")
	case cfg.endpoints < 1 || cfg.perNamespace < 1 || cfg.headlessEvery < 1 || cfg.importsEvery < 1:
		return errors.New("-endpoints, -per-namespace, -headless-every and -imports-every must be at least 1")
	case cfg.multicluster != "auto" && cfg.multicluster != "on" && cfg.multicluster != "off":
		return fmt.Errorf("-multicluster %q: auto, on or off", cfg.multicluster)
	}
	if cfg.pods > cfg.maxScale()*cfg.endpoints {
		return errors.New("-pods must be at most services x endpoints: pod k backs endpoint k")
	}
	for i := 1; i < len(cfg.services); i++ {
		if cfg.services[i] <= cfg.services[i-1] {
			return errors.New("-services must increase: scales are loaded one after the other")
		}
	}
	return nil
}

// intList parses "10,100,1000".
func intList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// maxScale is the largest number of services loaded.
func (cfg *config) maxScale() int { return cfg.services[len(cfg.services)-1] }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "tcpload" {
		if err := tcpLoadMain(os.Args[2:]); err != nil {
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
		err = rewrite(cfg)
	} else {
		err = run(ctx, cfg, os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// logf prints progress with the time since start.
var begin = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
}
