package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/schemadns/schemadns/soak/kube"
	"github.com/schemadns/schemadns/soak/mesos"
	"github.com/schemadns/schemadns/soak/report"
)

// results are everything the report is written from (and
// docs/reliability.json): the Kubernetes scenarios' results at the top
// level, as the page has always held them, and the Mesos ones under Mesos.
type results struct {
	kube.Results
	// Mesos are the Mesos scenarios' results, with their own run.
	Mesos *mesos.Results `json:",omitempty"`
}

func newResults(cfg *config, args []string) *results {
	return &results{Results: *kube.NewResults(&cfg.kube, report.Command(cfg.Scale, args), cfg.Note)}
}

// writeReport writes reliability.md and reliability.json into cfg.OutDir.
// A run of one family of scenarios alone (Kubernetes or Mesos) keeps the
// other family's results from the reliability.json already there.
func writeReport(cfg *config, res *results) error {
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	res = keepOthers(cfg, res)
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.OutDir, "reliability.json"), append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.OutDir, "reliability.md"), []byte(markdown(res)), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// keepOthers returns res with the results of the family of scenarios it
// did not run taken from the previous reliability.json in cfg.OutDir, if
// there is one that decodes.
func keepOthers(cfg *config, res *results) *results {
	kube, mesos := cfg.anySelected("kubernetes"), cfg.anySelected("mesos")
	if kube && mesos {
		return res
	}
	raw, err := os.ReadFile(filepath.Join(cfg.OutDir, "reliability.json"))
	if err != nil {
		return res
	}
	var prev results
	if err := json.Unmarshal(raw, &prev); err != nil {
		logf("previous reliability.json unreadable, not kept: %v", err)
		return res
	}
	if kube {
		out := *res
		out.Mesos = prev.Mesos
		return &out
	}
	prev.Mesos = res.Mesos
	if !prev.Ran() {
		return res
	}
	return &prev
}

// markdown renders the results as Markdown: the Kubernetes part, then the
// Mesos part.
func markdown(res *results) string {
	r := &report.Doc{}
	r.Heading(1, "Reliability")
	if res.Ran() {
		if res.Mesos != nil {
			r.Para("The Kubernetes plugins first, then [Mesos](#mesos-mesosschema) (mesosschema).")
		}
		kube.Write(r, &res.Results)
	}
	mesos.Write(r, res.Mesos)
	return r.String()
}
