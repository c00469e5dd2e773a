package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/schemadns/schemadns/soak/kube"
	"github.com/schemadns/schemadns/soak/mesos"
)

// TestSelectScenarios: groups expand, names add up, unknown names fail.
func TestSelectScenarios(t *testing.T) {
	cfg := &config{scenarios: "churn,mesos"}
	if err := cfg.selectScenarios(); err != nil {
		t.Fatal(err)
	}
	if !cfg.isSelected("churn") || cfg.isSelected("quiet") || !cfg.isSelected("mesos-slow") || !cfg.anySelected("kubernetes") {
		t.Errorf("selected %v", cfg.selected)
	}
	for _, bad := range []string{"mesos-nope", ""} {
		cfg := &config{scenarios: bad}
		if err := cfg.selectScenarios(); err == nil {
			t.Errorf("-scenarios %q accepted", bad)
		}
	}
}

// TestKeepOthers: a run of the Mesos scenarios alone keeps the Kubernetes
// results of the page, and the reverse; a run of both keeps nothing.
func TestKeepOthers(t *testing.T) {
	dir := t.TempDir()
	prev := &results{Results: kube.Results{Command: "make soak", Churn: &kube.ChurnResult{Rate: 5}}, Mesos: &mesos.Results{Command: "old mesos"}}
	raw, err := json.Marshal(prev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reliability.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(scenarios string, res *results) *results {
		cfg := &config{scenarios: scenarios}
		cfg.OutDir = dir
		if err := cfg.selectScenarios(); err != nil {
			t.Fatal(err)
		}
		return keepOthers(cfg, res)
	}
	got := run("mesos", &results{Results: kube.Results{Command: "new"}, Mesos: &mesos.Results{Command: "new mesos"}})
	if got.Churn == nil || got.Command != "make soak" || got.Mesos.Command != "new mesos" {
		t.Errorf("Mesos alone: %+v, Mesos %+v", got, got.Mesos)
	}
	got = run("churn", &results{Results: kube.Results{Command: "new", Churn: &kube.ChurnResult{Rate: 7}}})
	if got.Churn.Rate != 7 || got.Mesos == nil || got.Mesos.Command != "old mesos" {
		t.Errorf("Kubernetes alone: %+v", got)
	}
	got = run("kubernetes,mesos", &results{Results: kube.Results{Command: "new"}})
	if got.Churn != nil || got.Mesos != nil {
		t.Errorf("both: %+v", got)
	}
}
