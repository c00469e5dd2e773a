package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/mesosbench"
)

// pickShapes is the shapes of a scale named in list ("S2,M1"), each kind
// in the scale's order: the cluster shapes and the Mesos ones.
func pickShapes(scale, list string) ([]fixture.Shape, []mesosbench.Shape, error) {
	all, mesos := fixture.ShapesAt[scale], mesosbench.ShapesAt[scale]
	want := map[string]bool{}
	for f := range strings.SplitSeq(list, ",") {
		name := strings.ToUpper(strings.TrimSpace(f))
		if !slices.ContainsFunc(all, func(s fixture.Shape) bool { return s.Name == name }) &&
			!slices.ContainsFunc(mesos, func(s mesosbench.Shape) bool { return s.Name == name }) {
			return nil, nil, fmt.Errorf("unknown shape %q (%s)", f, shapeNames(scale))
		}
		want[name] = true
	}
	var out []fixture.Shape
	for _, s := range all {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	var outMesos []mesosbench.Shape
	for _, s := range mesos {
		if want[s.Name] {
			outMesos = append(outMesos, s)
		}
	}
	return out, outMesos, nil
}

// shapeNames is every shape of a scale, "S1, S2, …, M2".
func shapeNames(scale string) string {
	var names []string
	for _, s := range fixture.ShapesAt[scale] {
		names = append(names, s.Name)
	}
	for _, s := range mesosbench.ShapesAt[scale] {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}
