package results

import (
	"fmt"
	"slices"
	"testing"

	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/mesosbench"
)

// TestMergeResults: a run of S5 alone keeps the earlier run's other
// shapes, in order, and names them; a shape measured now replaces the old.
func TestMergeResults(t *testing.T) {
	old := &Results{Shapes: []*ShapeResult{{Shape: fixture.Shape{Name: "S1"}}, {Shape: fixture.Shape{Name: "S5"}, LoadSeconds: 1}},
		Mesos: []*mesosbench.Result{{Shape: mesosbench.Shape{Name: "M1"}}}, Mix: "old mix", Targets: map[string]string{"a": "old", "b": "old"}}
	res := &Results{Shapes: []*ShapeResult{{Shape: fixture.Shape{Name: "S5"}, LoadSeconds: 2}}, Targets: map[string]string{"a": "new"}}
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
	res := &Results{Shapes: []*ShapeResult{{Shape: fixture.Shape{Name: "S1"}, From: "A"}, {Shape: fixture.Shape{Name: "S2"}, From: "B"},
		{Shape: fixture.Shape{Name: "S5"}}, {Shape: fixture.Shape{Name: "S5"}}}, Mesos: []*mesosbench.Result{{Shape: mesosbench.Shape{Name: "M1"}, From: "A"}}}
	want := "S1, M1: from the run of A; S2: from the run of B; the other shapes from this run."
	if got := provenance(res); got != want {
		t.Errorf("provenance:\n%s\nwant\n%s", got, want)
	}
	if got := provenance(&Results{Shapes: []*ShapeResult{{Shape: fixture.Shape{Name: "S5"}}}}); got != "" {
		t.Errorf("provenance of a run with nothing kept: %q", got)
	}
}
