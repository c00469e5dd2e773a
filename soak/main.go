// Command soak runs the reliability scenarios against the
// plugins and writes docs/reliability.md: EndpointSlice and Service churn
// with every answer checked, a forced relist (etcd compacted while the API
// server is down), API server faults (stopped, connections reset, watches
// stalled), hostile DNS input, and slow TCP clients.
//
// Like bench/, it builds nothing itself (`make soak` builds bin/coredns and
// the API server binaries) and starts a real etcd and kube-apiserver on
// loopback (test/kubeapi). One bin/coredns runs kubeschema, multicluster
// and edns0autopath ("ours"); a second runs CoreDNS's own kubernetes plugin
// ("stock") on the same data for comparison. Both reach the API server
// through a TCP proxy of the soak's own, which the faults use.
//
//	cd soak && go run . -scale small
//
// Linux only: it reads /proc.
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

	"github.com/schemadns/schemadns/test/toolflags"
)

// config is the command line.
type config struct {
	toolflags.Common
	headless, clusterIP int
	endpoints, imports  int
	writers, churnRate  int
	churnDuration       time.Duration
	checkRate           int
	outage              time.Duration
	hostile             int
	slowConns           int
	scenarios           string
}

// presets are the scales: flag values applied unless given on the command
// line. "default" is the scale and the flags' own defaults.
var presets = map[string]map[string]string{
	"default": {},
	"small": {
		"headless": "200", "clusterip": "100", "imports": "20", "churn-duration": "15s",
		"outage": "10s", "hostile": "5000", "slow-conns": "200",
	},
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	cfg.Register(fs, "reliability.md", "Corefiles, logs, the API server's files", "default (the issue's scale) or small (a tenth, shorter phases)")
	fs.IntVar(&cfg.headless, "headless", 2000, "headless services, each with one EndpointSlice")
	fs.IntVar(&cfg.clusterIP, "clusterip", 1000, "ClusterIP services, each with one EndpointSlice")
	fs.IntVar(&cfg.endpoints, "endpoints", 10, "endpoints per service")
	fs.IntVar(&cfg.imports, "imports", 200, "ClusterSetIP ServiceImports (multicluster)")
	fs.IntVar(&cfg.writers, "writers", 96, "concurrent writers of the churn (client-go, protobuf, 8 per HTTP/2 connection)")
	fs.IntVar(&cfg.churnRate, "churn-rate", 0, "cap on the churn's writes per second (0: as fast as the API server accepts)")
	fs.DurationVar(&cfg.churnDuration, "churn-duration", time.Minute, "length of the churn")
	fs.IntVar(&cfg.checkRate, "check-rate", 500, "queries/s the checker sends to each server")
	fs.DurationVar(&cfg.outage, "outage", time.Minute, "length of each API server fault")
	fs.IntVar(&cfg.hostile, "hostile", 50000, "hostile messages sent to each server port")
	fs.IntVar(&cfg.slowConns, "slow-conns", 1000, "idle or slow TCP connections held against each server")
	fs.StringVar(&cfg.scenarios, "scenarios", "churn,quiet,relist,faults,hostile,slow", "the scenarios to run, comma-separated, in this order")
	if err := cfg.Parse(fs, args, presets); err != nil {
		return nil, err
	}
	return cfg, cfg.finish()
}

// finish resolves paths and checks the values.
func (cfg *config) finish() error {
	if err := cfg.Finish(); err != nil {
		return err
	}
	switch {
	case cfg.headless <= probeServices || cfg.clusterIP < 1 || cfg.endpoints < 1:
		return fmt.Errorf("-headless must be over %d, -clusterip and -endpoints at least 1", probeServices)
	case cfg.writers < 1 || cfg.checkRate < 1:
		return errors.New("-writers and -check-rate must be at least 1")
	case cfg.churnDuration <= 0 || cfg.outage <= 0:
		return errors.New("-churn-duration and -outage must be positive")
	}
	return nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// begin is when the run started, for the progress lines.
var begin = time.Now()

// logf prints progress with the time since start.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
}
