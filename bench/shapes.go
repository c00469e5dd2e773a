package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/test/clustershape"
	"github.com/schemadns/schemadns/test/toolreport"
)

// shape is one kind of cluster the plugins are measured on. A figure
// measured on one fixture is not a claim about every cluster, so the memory
// figures are taken on each shape, worst next to best.
type shape struct {
	Name  string // S1 …
	Title string // what it stands for
	// ClusterIP and Headless services, spread evenly over the numbering
	// (in S3 every tenth service is headless), each with Endpoints ready
	// endpoints in one EndpointSlice.
	ClusterIP, Headless, Endpoints int
	// PerNamespace services share a namespace; 0 puts all in one.
	PerNamespace int
	// Pods back the first endpoints, one pod per endpoint address, under
	// `pods verified`.
	Pods int
	// Imports are ServiceImports (every fifth one headless), for the
	// multicluster comparison.
	Imports int
	// BigHeadless are extra headless services of these sizes in their own
	// namespace; the largest is asked over TCP.
	BigHeadless []int
	// Perf: the CPU, TCP, programming-latency and in-process tests run on
	// this shape (the default fixture), besides memory, start-up and churn.
	Perf bool
	// Cluster, when set, is the shape instead of the fields above: the
	// threshold shape (S5) of test/clustershape, loaded by its loader and
	// measured twice, without and with the pod watch (thresholds.go).
	Cluster *clustershape.Shape `json:",omitempty"`
}

// services is the number of regular services (the big headless ones aside).
func (s shape) services() int { return s.ClusterIP + s.Headless }

// endpoints is the number of endpoints of the shape, big headless included.
func (s shape) endpoints() int {
	n := s.services() * s.Endpoints
	for _, b := range s.BigHeadless {
		n += b
	}
	return n
}

// namespaces is how many namespaces the regular services are spread over.
func (s shape) namespaces() int {
	if s.PerNamespace == 0 {
		return 1
	}
	return (s.services() + s.PerNamespace - 1) / s.PerNamespace
}

// describe is one line for the report.
func (s shape) describe() string {
	if s.Cluster != nil {
		return describeCluster(*s.Cluster)
	}
	var parts []string
	if s.ClusterIP > 0 {
		parts = append(parts, fmt.Sprintf("%s ClusterIP", toolreport.Thousands(s.ClusterIP)))
	}
	if s.Headless > 0 {
		parts = append(parts, fmt.Sprintf("%s headless", toolreport.Thousands(s.Headless)))
	}
	out := strings.Join(parts, " + ") + fmt.Sprintf(" services × %d endpoints", s.Endpoints)
	if len(s.BigHeadless) > 0 {
		out += fmt.Sprintf(", headless services of %s endpoints", joinInts(s.BigHeadless))
	}
	out += fmt.Sprintf(" (%s endpoints)", toolreport.Thousands(s.endpoints()))
	if s.namespaces() == 1 {
		out += ", all in one namespace"
	} else {
		out += fmt.Sprintf(", %d namespaces", s.namespaces())
	}
	if s.Pods > 0 {
		out += fmt.Sprintf(", %s pods", toolreport.Thousands(s.Pods))
	} else {
		out += ", no pods"
	}
	if s.Imports > 0 {
		out += fmt.Sprintf(", %s ServiceImports", toolreport.Thousands(s.Imports))
	}
	return out
}

// shapesAt are the shapes of each scale. "default" is the one the figures
// are stated at; "small" is a tenth of it, for development.
var shapesAt = map[string][]shape{
	"default": {
		{Name: "S1", Title: "ClusterIP-heavy", ClusterIP: 9000, Headless: 1000, Endpoints: 10, PerNamespace: 100},
		{Name: "S2", Title: "headless-heavy, one namespace", ClusterIP: 1000, Headless: 10000, Endpoints: 10},
		{Name: "S3", Title: "default fixture, pods verified", ClusterIP: 9000, Headless: 1000, Endpoints: 10, PerNamespace: 100,
			Pods: 20000, Imports: 1000, BigHeadless: []int{10, 100, 1000}, Perf: true},
		{Name: "S4", Title: "fat services", Headless: 1000, Endpoints: 100, PerNamespace: 100},
		{Name: "S5", Title: "Kubernetes scalability thresholds", Cluster: new(clustershape.S5())},
	},
	"small": {
		{Name: "S1", Title: "ClusterIP-heavy", ClusterIP: 900, Headless: 100, Endpoints: 10, PerNamespace: 100},
		{Name: "S2", Title: "headless-heavy, one namespace", ClusterIP: 100, Headless: 1000, Endpoints: 10},
		{Name: "S3", Title: "default fixture, pods verified", ClusterIP: 900, Headless: 100, Endpoints: 10, PerNamespace: 100,
			Pods: 2000, Imports: 100, BigHeadless: []int{10, 100, 1000}, Perf: true},
		{Name: "S4", Title: "fat services", Headless: 100, Endpoints: 100, PerNamespace: 100},
		{Name: "S5", Title: "Kubernetes scalability thresholds", Cluster: new(clustershape.S5().Scaled(0.1))},
	},
}

// pickShapes is the shapes of a scale named in list ("S2,M1"), each kind
// in the scale's order: the cluster shapes and the Mesos ones.
func pickShapes(scale, list string) ([]shape, []mesosShape, error) {
	all, mesos := shapesAt[scale], mesosShapesAt[scale]
	want := map[string]bool{}
	for f := range strings.SplitSeq(list, ",") {
		name := strings.ToUpper(strings.TrimSpace(f))
		if !slices.ContainsFunc(all, func(s shape) bool { return s.Name == name }) &&
			!slices.ContainsFunc(mesos, func(s mesosShape) bool { return s.Name == name }) {
			return nil, nil, fmt.Errorf("unknown shape %q (%s)", f, shapeNames(scale))
		}
		want[name] = true
	}
	var out []shape
	for _, s := range all {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	var outMesos []mesosShape
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
	for _, s := range shapesAt[scale] {
		names = append(names, s.Name)
	}
	for _, s := range mesosShapesAt[scale] {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// joinInts is "10, 100, 1000".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
