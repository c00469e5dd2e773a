package main

import (
	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/mesosbench"
	"github.com/schemadns/schemadns/bench/internal/server"

	"fmt"
	"slices"
	"testing"
)

func TestPickShapes(t *testing.T) {
	got, mesos, err := pickShapes("default", "s4, M2, S2")
	if err != nil || len(got) != 2 || got[0].Name != "S2" || got[1].Name != "S4" {
		t.Errorf("pickShapes: %v, %v; want S2 and S4 in the scale's order", got, err)
	}
	if len(mesos) != 1 || mesos[0].Name != "M2" || !mesos[0].Worst {
		t.Errorf("pickShapes: Mesos shapes %v; want M2, the worst case", mesos)
	}
	if got, mesos, err := pickShapes("small", "M1"); err != nil || len(got) != 0 || len(mesos) != 1 || mesos[0].Gen.Tasks != 1000 {
		t.Errorf("pickShapes small M1: %v, %v, %v; want M1 alone at a tenth", got, mesos, err)
	}
	if got, _, err := pickShapes("small", "S5"); err != nil || len(got) != 1 || got[0].Cluster == nil || got[0].Cluster.Namespaces*got[0].Cluster.PodsPerNamespace != 15000 {
		t.Errorf("pickShapes small S5: %v, %v; want the threshold shape at a tenth (15,000 pods)", got, err)
	}
	if _, _, err := pickShapes("default", "S6"); err == nil {
		t.Error("pickShapes S6: no error")
	}
}

// TestThresholdGoals judges each run of S5 on its own targets: the heap
// goal is 0.4× without the pod watch, 0.3× with it, and a relist counts
// only when every resource listed again.
func TestThresholdGoals(t *testing.T) {
	run := func(pods string, heapA, heapS int64, relisted bool) *shapeResult {
		lists := 0
		if relisted {
			lists = 1
		}
		return &shapeResult{Shape: fixture.Shape{Name: "S5"},
			Memory:      map[string]server.Memory{server.KeyOurs: {HeapInuse: heapA}, server.KeyStock: {HeapInuse: heapS}},
			FirstAnswer: map[string][]float64{server.KeyOurs: {7}, server.KeyStock: {10}},
			Run: &thresholdRun{Pods: pods, Relist: map[string]*relistResult{
				server.KeyOurs:  {SteadyRSS: 100 << 20, PeakRSS: 110 << 20, Resources: []resourceRelist{{Resource: "services", Before: 1, After: 2, Lists: lists}}},
				server.KeyStock: {SteadyRSS: 200 << 20, PeakRSS: 400 << 20, Resources: []resourceRelist{{Resource: "services", Before: -1, After: -1, Lists: 1}}},
			}}}
	}
	res := &results{Shapes: []*shapeResult{run("disabled", 35, 100, true), run("verified", 35, 100, false)}}
	got := map[string]string{}
	for _, g := range thresholdGoals(res) {
		got[g.Shape+": "+g.What] = g.Met
	}
	want := map[string]string{
		"S5, no pod watch: heap after GC, kubeschema against stock":                         "met",
		"S5, pods verified: heap after GC, kubeschema against stock":                        "not met",
		"S5, no pod watch: start-up to the first complete answer, kubeschema against stock": "met",
		"S5, no pod watch: relist peak RSS, kubeschema against its own steady RSS":          "met",
		"S5, pods verified: relist peak RSS, kubeschema against its own steady RSS":         "not met",
		"S5, no pod watch: relist peak RSS, kubeschema against stock's":                     "met",
		"S5, no pod watch: wrong answers under EndpointSlice churn: kubeschema":             "not measured",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
}

// TestMergeResults: a run of S5 alone keeps the earlier run's other
// shapes, in order, and names them; a shape measured now replaces the old.
func TestMergeResults(t *testing.T) {
	old := &results{Shapes: []*shapeResult{{Shape: fixture.Shape{Name: "S1"}}, {Shape: fixture.Shape{Name: "S5"}, LoadSeconds: 1}},
		Mesos: []*mesosbench.Result{{Shape: mesosbench.Shape{Name: "M1"}}}, Mix: "old mix", Targets: map[string]string{"a": "old", "b": "old"}}
	res := &results{Shapes: []*shapeResult{{Shape: fixture.Shape{Name: "S5"}, LoadSeconds: 2}}, Targets: map[string]string{"a": "new"}}
	kept := mergeResults(res, old)
	if !slices.Equal(kept, []string{"S1", "M1"}) {
		t.Errorf("kept %v, want S1 and M1", kept)
	}
	var names []string
	for _, sr := range res.Shapes {
		names = append(names, fmt.Sprintf("%s/%.0f", sr.Shape.Name, sr.LoadSeconds))
	}
	if !slices.Equal(names, []string{"S1/0", "S5/2"}) || len(res.Mesos) != 1 || res.Mix != "old mix" ||
		res.Targets["a"] != "new" || res.Targets["b"] != "old" {
		t.Errorf("merged: shapes %v, mesos %d, mix %q, targets %v", names, len(res.Mesos), res.Mix, res.Targets)
	}
}

// TestProvenance: the note names, for each earlier run, the shapes kept
// from it, once each.
func TestProvenance(t *testing.T) {
	res := &results{Shapes: []*shapeResult{{Shape: fixture.Shape{Name: "S1"}, From: "A"}, {Shape: fixture.Shape{Name: "S2"}, From: "B"},
		{Shape: fixture.Shape{Name: "S5"}}, {Shape: fixture.Shape{Name: "S5"}}}, Mesos: []*mesosbench.Result{{Shape: mesosbench.Shape{Name: "M1"}, From: "A"}}}
	want := "S1, M1: from the run of A; S2: from the run of B; the other shapes from this run."
	if got := provenance(res); got != want {
		t.Errorf("provenance:\n%s\nwant\n%s", got, want)
	}
	if got := provenance(&results{Shapes: []*shapeResult{{Shape: fixture.Shape{Name: "S5"}}}}); got != "" {
		t.Errorf("provenance of a run with nothing kept: %q", got)
	}
}
