package main

import (
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

	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/mesosbench"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/report"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/internal/toolreport"
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

const mib = 1 << 20
