package report

import (
	"testing"

	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
)

// TestThresholdGoals judges each run of S5 on its own targets: the heap
// goal is 0.4× without the pod watch, 0.3× with it, and a relist counts
// only when every resource listed again.
func TestThresholdGoals(t *testing.T) {
	run := func(pods string, heapA, heapS int64, relisted bool) *results.ShapeResult {
		lists := 0
		if relisted {
			lists = 1
		}
		return &results.ShapeResult{Shape: fixture.Shape{Name: "S5"},
			Memory:      map[string]server.Memory{server.KeyOurs: {HeapInuse: heapA}, server.KeyStock: {HeapInuse: heapS}},
			FirstAnswer: map[string][]float64{server.KeyOurs: {7}, server.KeyStock: {10}},
			Run: &results.ThresholdRun{Pods: pods, Relist: map[string]*results.RelistResult{
				server.KeyOurs:  {SteadyRSS: 100 << 20, PeakRSS: 110 << 20, Resources: []results.ResourceRelist{{Resource: "services", Before: 1, After: 2, Lists: lists}}},
				server.KeyStock: {SteadyRSS: 200 << 20, PeakRSS: 400 << 20, Resources: []results.ResourceRelist{{Resource: "services", Before: -1, After: -1, Lists: 1}}},
			}}}
	}
	res := &results.Results{Shapes: []*results.ShapeResult{run("disabled", 35, 100, true), run("verified", 35, 100, false)}}
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
