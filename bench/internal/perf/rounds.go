// Package perf measures running servers: CPU per query under a query load
// (dnsperf over UDP, the tool's own client over TCP) in interleaved rounds
// after a calibration, the programming latency of API changes, and the
// in-process ServeDNS benchmark; and the summaries of those figures.
package perf

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/toolflags"
)

// Settings are the command line's settings of the CPU tests.
type Settings struct {
	server.Options
	Rounds int
	// Duration is a fixed-load run's, SatDuration a saturation run's.
	Duration, SatDuration time.Duration
	Benchtime             string // go test -benchtime of the in-process benchmark
}

// logf prints progress with the time since start.
var logf = toolflags.Logf

// The tests of a round on the default fixture, in the order they run.
// Each target of a test runs once per round, in target order.
const (
	TestMixed     = "mixed"     // the cluster mix over UDP at a fixed load
	TestTCP       = "tcp"       // the largest headless service over TCP at a fixed load
	TestMC        = "mc"        // the clusterset.local mix over UDP at a fixed load
	TestSaturated = "saturated" // the cluster mix over UDP, as fast as dnsperf sends
)

// Figures are the figures of the tests run on the default fixture.
type Figures struct {
	Rates         map[string]int                 // test → offered load, q/s
	Calibration   map[string]map[string]float64  // test → target → saturated q/s
	Runs          map[string]map[string][]Result // test → target → one per round
	Order         map[string][]string            // test → its targets in round order
	CrossCheck    []server.CrossCheck
	Latency       map[string]LatencyResult
	LatencyPaired PairedLatency
	GoBench       []GoBench
}

// Plan is one test: which targets, and its dnsperf run at a fixed load
// (the saturated test has qps 0).
type Plan struct {
	Name    string
	Targets []*server.Server
	Spec    Spec
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

// Calibrate saturates each target of pl once (also the warm-up) and sets
// pl's fixed load to given, or when 0 to half the slowest target's rate.
func Calibrate(ctx context.Context, cfg Settings, pl *Plan, given int, p *Figures) error {
	calib := pl.Spec
	calib.QPS, calib.Duration, calib.Verbose = 0, cfg.SatDuration, false
	calib.Outstanding *= 4
	calib.Clients *= 2
	p.Calibration[pl.Name] = map[string]float64{}
	slowest := math.Inf(1)
	for _, s := range pl.Targets {
		res, err := Run(ctx, cfg, s, calib)
		if err != nil {
			return fmt.Errorf("calibrate %s: %w", pl.Name, err)
		}
		p.Calibration[pl.Name][s.Key] = res.QPS
		slowest = min(slowest, res.QPS)
	}
	pl.Spec.QPS = given
	if pl.Spec.QPS == 0 {
		pl.Spec.QPS = roundDown(slowest / 2)
	}
	p.Rates[pl.Name] = pl.Spec.QPS
	logf("%s: saturated %v q/s; fixed load %d q/s", pl.Name, roundMap(p.Calibration[pl.Name]), pl.Spec.QPS)
	return nil
}

// RunRounds runs the rounds of plans: in each, every test on each of its
// targets in turn.
func RunRounds(ctx context.Context, cfg Settings, plans []Plan, p *Figures) error {
	p.Runs, p.Order = map[string]map[string][]Result{}, map[string][]string{}
	for _, pl := range plans {
		for _, s := range pl.Targets {
			p.Order[pl.Name] = append(p.Order[pl.Name], s.Key)
		}
	}
	for round := 1; round <= cfg.Rounds; round++ {
		for _, pl := range plans {
			if p.Runs[pl.Name] == nil {
				p.Runs[pl.Name] = map[string][]Result{}
			}
			var line []string
			for _, s := range pl.Targets {
				res, err := Run(ctx, cfg, s, pl.Spec)
				if err != nil {
					return fmt.Errorf("round %d %s: %w", round, pl.Name, err)
				}
				p.Runs[pl.Name][s.Key] = append(p.Runs[pl.Name][s.Key], res)
				line = append(line, fmt.Sprintf("%s %.1fµs/q %.0fq/s", s.Key, res.CPUPerQuery, res.QPS))
			}
			logf("round %d/%d %-9s %s", round, cfg.Rounds, pl.Name, strings.Join(line, ", "))
		}
	}
	return nil
}

// ProfileRun records s's CPU profile over one run of spec.
func ProfileRun(ctx context.Context, cfg Settings, s *server.Server, spec Spec, path string) error {
	done := server.CPUProfile(s, max(1, int(spec.Duration.Seconds())), path)
	if _, err := Run(ctx, cfg, s, spec); err != nil {
		return err
	}
	return <-done
}
