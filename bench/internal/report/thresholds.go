package report

import (
	"fmt"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// The threshold shape's goals and its section of the report: the targets
// of the scalability work (heap after GC against stock, the relist peak
// against the server's own steady RSS and stock's peak, start-up against
// stock), each run of S5 judged on its own.

// heapGoal is the most our heap after GC may be of stock's, by pods mode.
var heapGoal = map[string]float64{"disabled": 0.4, "verified": 0.3}

const (
	relistOwnGoal   = 1.2 // our relist peak RSS over our steady RSS
	relistStockGoal = 0.5 // our relist peak RSS over stock's
	startGoal       = 0.8 // our start-up to the first complete answer over stock's
)

// thresholdRuns are the results of the threshold shape's runs.
func thresholdRuns(res *results.Results) []*results.ShapeResult {
	var out []*results.ShapeResult
	for _, sr := range res.Shapes {
		if sr.Run != nil {
			out = append(out, sr)
		}
	}
	return out
}

// thresholdGoals are the rows of the goals table for each run of S5.
func thresholdGoals(res *results.Results) []goal {
	var out []goal
	for _, sr := range thresholdRuns(res) {
		out = append(out, heapGoalOf(sr), startGoalOf(sr))
		out = append(out, relistGoals(sr)...)
		out = append(out, churnGoalOf(sr))
	}
	return out
}

func heapGoalOf(sr *results.ShapeResult) goal {
	want := heapGoal[sr.Run.Pods]
	g := goal{What: "heap after GC, kubeschema against stock", Shape: sr.Label(),
		Goal: fmt.Sprintf("≤ %.1f×", want), Met: "not measured", Measured: toolreport.Dash}
	a, okA := sr.Memory[server.KeyOurs]
	s, okS := sr.Memory[server.KeyStock]
	if okA && okS && s.HeapInuse > 0 {
		ratio := float64(a.HeapInuse) / float64(s.HeapInuse)
		g.Measured = fmt.Sprintf("%s / %s = %.2f×", toolreport.MiB(a.HeapInuse), toolreport.MiB(s.HeapInuse), ratio)
		g.Met = toolreport.Met(ratio <= want)
	}
	return g
}

func startGoalOf(sr *results.ShapeResult) goal {
	g := goal{What: "start-up to the first complete answer, kubeschema against stock", Shape: sr.Label(),
		Goal: fmt.Sprintf("≤ %.1f×", startGoal), Met: "not measured", Measured: toolreport.Dash}
	a, s := sr.FirstAnswerMedian(server.KeyOurs), sr.FirstAnswerMedian(server.KeyStock)
	if a > 0 && s > 0 {
		g.Measured = fmt.Sprintf("%.1f s / %.1f s = %.2f×", a, s, a/s)
		g.Met = toolreport.Met(a/s <= startGoal)
	}
	return g
}

// relistGoals: our peak against our steady RSS, and against stock's peak.
func relistGoals(sr *results.ShapeResult) []goal {
	own := goal{What: "relist peak RSS, kubeschema against its own steady RSS", Shape: sr.Label(),
		Goal: fmt.Sprintf("≤ %.1f×", relistOwnGoal), Met: "not measured", Measured: toolreport.Dash}
	vs := goal{What: "relist peak RSS, kubeschema against stock's", Shape: sr.Label(),
		Goal: fmt.Sprintf("≤ %.1f×", relistStockGoal), Met: "not measured", Measured: toolreport.Dash}
	a, s := sr.Run.Relist[server.KeyOurs], sr.Run.Relist[server.KeyStock]
	if a != nil && a.PeakRSS > 0 && a.SteadyRSS > 0 {
		ratio := float64(a.PeakRSS) / float64(a.SteadyRSS)
		own.Measured = fmt.Sprintf("%s / %s = %.2f×", toolreport.MiB(a.PeakRSS), toolreport.MiB(a.SteadyRSS), ratio)
		own.Met = toolreport.Met(ratio <= relistOwnGoal && a.AllRelisted())
		if !a.AllRelisted() {
			own.Measured += "; not relisted: " + strings.Join(a.NotRelisted(), ", ")
		}
	}
	if a != nil && s != nil && a.PeakRSS > 0 && s.PeakRSS > 0 {
		ratio := float64(a.PeakRSS) / float64(s.PeakRSS)
		vs.Measured = fmt.Sprintf("%s / %s = %.2f×", toolreport.MiB(a.PeakRSS), toolreport.MiB(s.PeakRSS), ratio)
		vs.Met = toolreport.Met(ratio <= relistStockGoal && a.AllRelisted() && s.AllRelisted())
	}
	return []goal{own, vs}
}

func churnGoalOf(sr *results.ShapeResult) goal {
	g := goal{What: "wrong answers under EndpointSlice churn: kubeschema", Shape: sr.Label(), Goal: "0",
		Met: "not measured", Measured: toolreport.Dash}
	if sr.Churn == nil {
		return g
	}
	c := sr.Churn.Check[server.KeyOurs]
	if c.Answers == 0 {
		return g
	}
	g.Measured = fmt.Sprintf("%d of %s", c.Wrong, toolreport.Thousands(c.Answers))
	if c.StaleAtEnd > 0 {
		g.Measured += fmt.Sprintf(", %d stale at the end", c.StaleAtEnd)
	}
	g.Met = toolreport.Met(c.Wrong+c.StaleAtEnd == 0)
	return g
}

// writeThresholds is the threshold shape's section: for each run, the
// cluster mix at a fixed load and the forced relist of each server.
func writeThresholds(b *toolreport.Doc, res *results.Results) {
	runs := thresholdRuns(res)
	if len(runs) == 0 {
		return
	}
	sh := runs[0].Shape
	b.Heading(2, "%s %s", sh.Name, sh.Title)
	b.Para("%s. Loaded once (%.0f s, %d requests in flight), measured twice on the same API server: "+
		"both plugins with `pods disabled`, then both with `pods verified`. Memory, start-up and churn of each run "+
		"are in the tables above, under their own rows.", sh.Describe(), runs[0].LoadSeconds, runs[0].Run.Writers)
	for _, sr := range runs {
		writeThresholdRun(b, sr)
	}
	b.Para("The forced relist is `make soak`'s: the API server stopped, etcd compacted to its latest revision, "+
		"the API server started again, so every watch resumes from a revision that is gone and each informer "+
		"lists everything again while it still holds what it had. Each server is started alone for it, with no "+
		"query load. Steady RSS is read %s after the first complete answer; the peak is VmHWM, reset just before "+
		"the outage. The heap is `go_memstats_heap_inuse_bytes` sampled every %s from /metrics (no forced GC). "+
		"A resource counts as relisted when the API server's audit log shows a list by the server after the outage "+
		"(and, for kubeschema, its `coredns_watchcache_relists_total` went up).", results.RelistSettle, results.RelistSample)
}

func writeThresholdRun(b *toolreport.Doc, sr *results.ShapeResult) {
	run := sr.Run
	b.Heading(3, "%s", sr.Label())
	if p := run.CPU; p != nil {
		perfTable(b, p, perf.TestMixed, fmt.Sprintf("%s: cluster mix over UDP at %d queries/s", sr.Label(), p.Rates[perf.TestMixed]),
			versus{"floor", server.KeyFloor}, versus{"stock", server.KeyStock})
		b.Para("The fixed load is %s. Command: `%s`.", run.LoadFrom, run.Command)
		if len(p.CrossCheck) > 0 {
			writeCrossCheck(b, p, "")
			b.End()
		}
	}
	if len(run.Relist) == 0 {
		return
	}
	t := toolreport.NewTable("server", "steady RSS", "peak RSS", "peak ÷ steady", "steady heap", "peak heap (samples)",
		"API server down, s", "relist, s", "relisted", "answers after").TextColumns(1)
	for _, key := range []string{server.KeyOurs, server.KeyStock} {
		r := run.Relist[key]
		if r == nil {
			continue
		}
		after := "complete"
		if r.AnswersAfter != "" {
			after = r.AnswersAfter
		}
		t.Row(key, toolreport.MiB(r.SteadyRSS), toolreport.Bold(toolreport.MiB(r.PeakRSS)),
			toolreport.Ratio(float64(r.PeakRSS), float64(r.SteadyRSS)),
			toolreport.MiB(r.SteadyHeap), fmt.Sprintf("%s (%d)", toolreport.MiB(r.PeakHeap), r.HeapSamples),
			fmt.Sprintf("%.1f", r.DownSeconds), fmt.Sprintf("%.1f", r.Seconds), results.RelistText(r), after)
	}
	b.Heading(4, "Forced relist")
	b.Table(t)
}
