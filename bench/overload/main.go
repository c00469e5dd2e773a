// Command overload measures how a cluster DNS server behaves past the
// query rate its CPU serves: ours (deploy/base's Corefile, and the same
// without its admission plugin) and stock CoreDNS (kubeadm's Corefile,
// alone and with shed), on bench's S1 shape in a real kube-apiserver, at
// 0.5, 1, 2 and 4 times the rate at which ours saturates its core. The
// load is two kinds at once from many loopback source addresses: cluster
// names, and unique external names forwarded to a stub upstream that
// answers after 200 ms or never. It writes docs/overload.md, .svg and
// .json, and the summary into docs/benchmarks.md. `make overload` runs it;
// by hand:
//
//	cd bench && GOWORK=off go run ./overload -scale small
//
// Linux only: it pins processes with taskset and reads /proc.
package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/schemadns/schemadns/internal/toolflags"
)

// config is the command line.
type config struct {
	toolflags.Common
	multiples            []float64
	servers              []string
	upstreams            []string
	duration, timeout    time.Duration
	warmup               time.Duration
	external             float64
	clients              int
	saturation           int
	serverCPU, clientCPU int
	sockets              bool
	// clusterOnly loads S1 and waits (tuning runs reuse it by kubeconfig).
	clusterOnly bool
	// Set by the run, or given: an API server that already holds S1.
	work, kubeconfig string
}

var presets = map[string]map[string]string{
	"default": {},
	"small":   {"duration": "3s", "multiples": "1,2", "upstreams": "slow"},
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("overload", flag.ContinueOnError)
	cfg.Register(fs, "overload.md, .svg and .json (and the summary in benchmarks.md)", "Corefiles and server logs",
		"default (every rate and upstream) or small (1× and 2×, the slow upstream, 3 s runs)")
	var multiples, servers, upstreams string
	fs.StringVar(&multiples, "multiples", "0.5,1,2,4", "offered loads, as multiples of ours's saturation rate")
	fs.StringVar(&servers, "servers", keyOurs+","+keyOursPlain+","+keyStock+","+keyStockShed, "the configurations, comma-separated: "+
		keyOurs+" (deploy/base), "+keyOursPlain+" (deploy/base without clusterfirst), "+keyStock+" (kubeadm's Corefile), "+keyStockShed+" (with shed)")
	fs.StringVar(&upstreams, "upstreams", upstreamSlow+","+upstreamSilent, "the upstream's behaviours: slow (answers after 200 ms), silent (never answers)")
	fs.DurationVar(&cfg.duration, "duration", 8*time.Second, "length of each load")
	fs.DurationVar(&cfg.warmup, "warmup", 10*time.Second, "light load (2,000 q/s) on each server before its run: past its start-up's collections and first allocations")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Second, "how long the client waits for an answer (dnsperf's -t 2 in make bench)")
	fs.Float64Var(&cfg.external, "external", 0.2, "the share of external names in the load")
	fs.IntVar(&cfg.clients, "clients", 64, "client source addresses (127.0.1.1 …), a socket each")
	fs.IntVar(&cfg.saturation, "saturation", 0, "ours's saturation rate, q/s: the most it answers a second (0: find it, by a ramp)")
	fs.IntVar(&cfg.serverCPU, "server-cpu", 1, "CPU the DNS server is pinned to")
	fs.IntVar(&cfg.clientCPU, "client-cpu", 0, "CPU the load, the stub upstream and the watch are pinned to")
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "an API server that already holds the shape (one started by -cluster-only): no API server is started or loaded")
	fs.BoolVar(&cfg.clusterOnly, "cluster-only", false, "start the API server, load the shape, print its kubeconfig and wait until interrupted (for -kubeconfig)")
	fs.BoolVar(&cfg.sockets, "sockets", true, "also measure saturation and CPU per query at GOMAXPROCS 1 and 2, with and without multisocket")
	if err := cfg.Parse(fs, args, presets); err != nil {
		return nil, err
	}
	var err error
	if cfg.multiples, err = floats(multiples); err != nil {
		return nil, fmt.Errorf("-multiples: %w", err)
	}
	cfg.servers, cfg.upstreams = strings.Split(servers, ","), strings.Split(upstreams, ",")
	known := serverConfigs(".")
	for _, s := range cfg.servers {
		if _, ok := known[s]; !ok {
			return nil, fmt.Errorf("-servers: unknown %q", s)
		}
	}
	for _, u := range cfg.upstreams {
		if u != upstreamSlow && u != upstreamSilent {
			return nil, fmt.Errorf("-upstreams: unknown %q", u)
		}
	}
	if cfg.external < 0 || cfg.external >= 1 || cfg.clients < 1 || cfg.clients > 1000 {
		return nil, errors.New("-external must be in [0, 1) and -clients in [1, 1000]")
	}
	return cfg, cfg.Finish()
}

func floats(list string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q: want a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func main() { toolflags.Main("overload", parseFlags, run) }

var logf = toolflags.Logf
