package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schemadns/schemadns/internal/toolreport"
	"github.com/schemadns/schemadns/soak/kube"
	"github.com/schemadns/schemadns/soak/mesos"
	"github.com/schemadns/schemadns/soak/report"
)

// run runs the selected scenarios, the Kubernetes ones first (their
// cluster and servers set up only if one is selected, and stopped before
// the Mesos ones start), and writes the report, also after a scenario
// failed.
func run(ctx context.Context, cfg *config, args []string) error {
	if _, err := os.Stat(cfg.CoreDNS); err != nil {
		return fmt.Errorf("%s missing (make build): %w", cfg.CoreDNS, err)
	}
	work, err := os.MkdirTemp("", "schemadns-soak-")
	if err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	if cfg.Keep {
		logf("work directory (kept): %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	res := newResults(cfg, args)
	if cfg.anySelected("kubernetes") {
		if err := kube.Run(ctx, &cfg.kube, cfg.isSelected, work, &res.Results); err != nil {
			return err
		}
	}
	if cfg.anySelected("mesos") && ctx.Err() == nil {
		res.Mesos = mesos.NewResults(&cfg.mesos, report.Command(cfg.Scale, args), cfg.Note)
		mesos.Run(ctx, &cfg.mesos, cfg.isSelected, work, res.Mesos)
	}
	res.Finished, res.Machine.LoadEnd = time.Now(), toolreport.LoadAverage()
	if err := writeReport(cfg, res); err != nil {
		return err
	}
	logf("wrote %s", filepath.Join(cfg.OutDir, "reliability.md"))
	errs := res.Errors
	if res.Mesos != nil {
		errs = append(slices.Clone(errs), res.Mesos.Errors...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d scenarios failed: %s", len(errs), strings.Join(errs, "; "))
	}
	return nil
}
