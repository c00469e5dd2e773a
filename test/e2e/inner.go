package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/report"
	"github.com/schemadns/schemadns/test/e2e/scenario"
	"github.com/schemadns/schemadns/test/e2e/scenario/autopath"
	"github.com/schemadns/schemadns/test/e2e/scenario/controllers"
	"github.com/schemadns/schemadns/test/e2e/scenario/disruptions"
	"github.com/schemadns/schemadns/test/e2e/scenario/multicluster"
	"github.com/schemadns/schemadns/test/e2e/scenario/relist"
	"github.com/schemadns/schemadns/test/e2e/scenario/resolvers"
	"github.com/schemadns/schemadns/test/e2e/scenario/thresholds"
	"github.com/schemadns/schemadns/test/e2e/scenario/upgrade"
)

// inner starts the cluster, runs every check and writes the report. It
// stops the cluster on return; the run on the host (cluster.Host) clears
// the rest.
func inner(o options) error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if o.deadline > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, o.deadline)
		defer stop()
	}
	env := &scenario.Env{Report: newReport(o.scale), Start: time.Now()}
	err := run(ctx, o, env)
	if err != nil {
		env.Report.Fail("run", err.Error())
	}
	if werr := env.Report.Write(o.out); werr != nil {
		err = errors.Join(err, werr)
	}
	if o.scale != scaleDefault {
		if werr := env.Report.SpliceInto(o.summary); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if env.Stub != nil {
		env.Stub.Stop()
	}
	if env.Cluster != nil && !o.keep {
		env.Cluster.Stop()
	}
	if err == nil && env.Report.Failed() {
		err = fmt.Errorf("%d checks failed (see %s)", env.Report.Failures(), o.out)
	}
	return err
}

// run is the whole sequence: the cluster, our image and the stub, then
// the steps of the run's scale; each step's failure is fatal only where
// later steps cannot go on without it.
func run(ctx context.Context, o options, env *scenario.Env) error {
	cfg := cluster.Default
	if o.thresholds() {
		cfg = thresholds.ClusterConfig
	}
	var err error
	env.Cluster, err = cluster.Start(ctx, cfg, o.keep, env.Logf)
	if err != nil {
		return err
	}
	env.Report.Figure("cluster start-up", fmt.Sprintf("%.0f s", time.Since(env.Start).Seconds()))
	start := time.Now()
	ref, err := env.Cluster.LoadImages(ctx, o.image)
	if err != nil {
		return err
	}
	env.OurImage, env.OurTag = ref, ref[strings.LastIndex(ref, ":")+1:]
	env.Logf("images built and imported in %.1fs; ours is %s", time.Since(start).Seconds(), ref)
	if env.Stub, err = cluster.StartStub(); err != nil {
		return err
	}
	return runSteps(ctx, env, steps(o, env))
}

// steps are the run's scenarios in order: the checks of docs/e2e.md, or
// those of a thresholds or disruptions run.
func steps(o options, env *scenario.Env) []scenario.Step {
	switch o.scale {
	case scaleThresholds:
		return thresholds.New(env, o.thresholdsScale).Steps()
	case scaleDisruptions:
		return disruptions.New(env).Steps()
	}
	return []scenario.Step{
		{Name: "stock CoreDNS installed", Run: env.InstallStock},
		{Name: "workloads", Run: env.StartWorkloads},
		{Name: "upgrade and rollback", Run: upgrade.New(env).Run},
		{Name: "real resolvers", Run: resolvers.New(env).Run},
		{Name: "real controllers", Run: controllers.New(env).Run},
		{Name: "DNS pod killed", Run: disruptions.New(env).Kill},
		{Name: "node-local autopath", Run: autopath.New(env).Run},
		{Name: "disruptions through node-local", Run: disruptions.New(env).NodeLocal},
		{Name: "multicluster", Run: multicluster.New(env).Run},
		{Name: "memory limit under a forced relist", Run: relist.New(env, o.relistSvc).Run},
	}
}

// runSteps runs the steps in order and times each.
func runSteps(ctx context.Context, env *scenario.Env, steps []scenario.Step) error {
	for _, s := range steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		env.Logf("== %s", s.Name)
		start := time.Now()
		if err := s.Run(ctx); err != nil {
			env.Report.Fail(s.Name, err.Error())
			env.Logf("%s: FAILED: %v", s.Name, err)
			if errors.Is(err, scenario.ErrFatal) {
				return err
			}
		}
		env.Report.Duration(s.Name, time.Since(start))
	}
	return nil
}

// splicedRuns are the runs whose sections the default run's page carries,
// in the order the page has them.
var splicedRuns = []report.Spliced{
	{Scale: scaleThresholds, Heading: thresholds.Heading},
	{Scale: scaleDisruptions, Heading: disruptions.Heading},
}

// newReport is the report of a run of the scale, its page headed as that
// run's.
func newReport(scale string) *report.Report {
	p := report.Page{Title: "A real cluster: what `make e2e` proved", Command: "make e2e",
		Intro: cluster.Description + cluster.KeepUsage, Scale: scaleDefault}
	switch scale {
	case scaleThresholds:
		p = thresholds.Page()
	case scaleDisruptions:
		p = disruptions.Page()
	}
	p.Carried = splicedRuns
	return report.New(p)
}
