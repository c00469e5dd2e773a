// Command absorb measures how many EndpointSlice updates per second each
// DNS server absorbs on one core: kubeschema (ours) against CoreDNS's
// stock kubernetes plugin, compiled into the same bin/coredns, with the
// same options. A real kube-apiserver on a small machine cannot write
// updates as fast as either server takes them in, so the tool is the API
// server: a fake one in its own process on loopback, serving the
// protobuf lists and watches a real one would, with every update encoded
// before the clock starts and released at once on the watch. It writes
// docs/absorption.md. `make absorb` runs it; by hand:
//
//	cd bench && GOWORK=off go run ./absorb -scale small
//
// Linux only: it reads /proc and pins processes with taskset.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schemadns/schemadns/internal/toolflags"
)

// config is the command line.
type config struct {
	toolflags.Common
	shapes               []shape
	rounds               int
	updates              int
	checkRate            int
	spot                 int
	timeout              time.Duration
	serverCPU, clientCPU int
	pin                  bool
	work                 string
	profile              string
}

// presets are the scales; small is a tenth of each shape and of its
// updates.
var presets = map[string]map[string]string{"default": {}, "small": {}}

// pinnedEnv marks the process re-executed under taskset.
const pinnedEnv = "ABSORB_PINNED"

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("absorb", flag.ContinueOnError)
	var shapes string
	cfg.Register(fs, "absorption.md", "Corefiles, kubeconfigs, server logs", "default (bench's S2 and S4 at full size) or small (a tenth of each and of its updates)")
	fs.StringVar(&shapes, "shapes", "S2,S4", "the shapes, comma-separated: S2 headless-heavy in one namespace, S4 fat services")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds per shape; each runs ours and stock once, in alternating order")
	fs.IntVar(&cfg.updates, "updates", 0, "updates fed per run (0: the shape's own, S2 250000, S4 70000; a tenth at -scale small)")
	fs.IntVar(&cfg.checkRate, "check-rate", 200, "queries/s of the model check during the absorption")
	fs.IntVar(&cfg.spot, "spot", 20, "changed names whose SRV and last address's PTR are checked after each run")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "how long a server may take to absorb the updates")
	fs.IntVar(&cfg.serverCPU, "server-cpu", 1, "CPU the DNS server is pinned to (GOMAXPROCS=1)")
	fs.IntVar(&cfg.clientCPU, "client-cpu", 0, "CPU this tool (fake API server, feeder, checker) is pinned to")
	fs.BoolVar(&cfg.pin, "pin", true, "pin the server and this tool with taskset")
	fs.StringVar(&cfg.profile, "profile", "", "write each server's CPU profile of the first seconds of its absorption "+
		"to this directory (a pprof block is added to the Corefile; the figures then include the profiler's small cost)")
	if err := cfg.Parse(fs, args, presets); err != nil {
		return nil, err
	}
	if err := cfg.Finish(); err != nil {
		return nil, err
	}
	all := shapesAt[cfg.Scale]
	for f := range strings.SplitSeq(shapes, ",") {
		found := false
		for _, s := range all {
			if strings.EqualFold(s.Name, strings.TrimSpace(f)) {
				cfg.shapes, found = append(cfg.shapes, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-shapes: unknown shape %q (S2, S4)", f)
		}
	}
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return nil, err
		}
	}
	if cfg.rounds < 1 || cfg.checkRate < 1 {
		return nil, errors.New("-rounds and -check-rate must be at least 1")
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "absorb:", err)
		os.Exit(2)
	}
	if cfg.pin && os.Getenv(pinnedEnv) == "" {
		os.Exit(repin(cfg.clientCPU))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "absorb:", err)
		os.Exit(1)
	}
}

// repin runs this program again on one CPU (taskset execs it, so every
// thread of it is pinned) and returns its exit code.
func repin(cpu int) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "absorb:", err)
		return 1
	}
	cmd := exec.Command("taskset", append([]string{"-c", strconv.Itoa(cpu), exe}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), pinnedEnv+"=1")
	signal.Ignore(os.Interrupt, syscall.SIGTERM) // the child gets them too and ends cleanly
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "absorb: taskset:", err)
		return 1
	}
	return 0
}

// begin is when the tool started: the origin of the update bytes' times.
var begin = time.Now()

// logf prints progress with the time since start.
var logf = toolflags.Logf
