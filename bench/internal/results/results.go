// Package results are the figures of a bench run, as benchmarks.json holds
// them and the report is written from: by cluster shape, by run of the
// threshold shape, by Mesos shape; and the merge of a run with the shapes
// an earlier one measured (-keep-others).
package results

import (
	"time"

	"github.com/schemadns/schemadns/bench/internal/churn"
	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/mesosbench"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/clustershape"
)

// Results are everything the report is written from (and docs/benchmarks.json).
type Results struct {
	Started, Finished time.Time
	Command           string
	Note              string
	Scale             string
	Machine           Machine
	Rounds            int
	Duration          string
	SatDuration       string
	Changes           int
	Benchtime         string
	Pinning           string
	Churn             ChurnSettings
	Mix, MCMix        string
	Commands          map[string]string // test → the dnsperf command
	GoBenchCommand    string
	Targets           map[string]string // key → what it is
	Shapes            []*ShapeResult
	// Mesos are the Mesos shapes' figures (internal/mesosbench).
	Mesos  []*mesosbench.Result
	Errors []string
}

// ChurnSettings are the churn's settings, for the report.
type ChurnSettings struct {
	Rate, Writers, CheckRate int
	Duration                 string
}

// ShapeResult are the figures of one shape.
type ShapeResult struct {
	Shape       fixture.Shape
	LoadSeconds float64
	Memory      map[string]server.Memory // by target: after sync and a forced GC
	// FirstAnswer is by target the seconds from a process's start to the
	// probes' complete answers, one per start (the last start is the
	// process measured afterwards).
	FirstAnswer map[string][]float64
	// Together is the same, for ours and stock started at the same moment
	// against the one API server, unpinned, -starts times.
	Together map[string][]float64
	Churn    *churn.Result
	Perf     *perf.Figures // the CPU, TCP and latency tests (the default fixture only)
	// Run is what a run of the threshold shape (S5) measures besides.
	Run *ThresholdRun `json:",omitempty"`
	// From names the earlier run the shape was kept from (-keep-others);
	// empty for the run's own.
	From string `json:",omitempty"`
}

// Label is the shape's name in the tables, with the run's on the
// threshold shape: "S2", "S5, pods verified".
func (sr *ShapeResult) Label() string {
	if sr.Run != nil {
		return sr.Run.Label(sr.Shape.Name)
	}
	return sr.Shape.Name
}

// Short is label for the chart's groups: "S2", "S5 pods".
func (sr *ShapeResult) Short() string {
	if sr.Run != nil {
		return sr.Run.Short(sr.Shape.Name)
	}
	return sr.Shape.Name
}

// FirstAnswerMedian is the median time of a target's starts to its first
// complete answer, seconds (0 when not measured).
func (sr *ShapeResult) FirstAnswerMedian(key string) float64 { return perf.Median(sr.FirstAnswer[key]) }

// ThresholdRun is what only a run of the threshold shape has.
type ThresholdRun struct {
	Pods   string // the pods option of both plugins: disabled (no pod watch) or verified
	Counts clustershape.Counts
	// Writers wrote the shape, once for both runs, in LoadSeconds of the
	// first run's ShapeResult (the second's is the same figure).
	Writers int
	// CPU is the cluster mix over UDP at a fixed load on kubeschema, stock
	// and the floor (perf.Figures' TestMixed only).
	CPU *perf.Figures
	// LoadFrom says where CPU's fixed load comes from: S3's in this run,
	// -qps, or the calibration of the first S5 run.
	LoadFrom string
	Command  string // the dnsperf command of the mix
	// Relist is the forced relist, by target, each server alone.
	Relist map[string]*RelistResult
}

// Label is the run's name in the tables: "S5, no pod watch".
func (r *ThresholdRun) Label(shapeName string) string {
	if r.Pods == "disabled" {
		return shapeName + ", no pod watch"
	}
	return shapeName + ", pods " + r.Pods
}

// Short is the run's name in the chart: "S5", "S5 pods".
func (r *ThresholdRun) Short(shapeName string) string {
	if r.Pods == "disabled" {
		return shapeName
	}
	return shapeName + " pods"
}
