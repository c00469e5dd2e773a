package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// goal is one target, evaluated on the shape it is stated for.
type goal struct {
	What, Shape, Goal, Measured string
	Met                         string // "met", "not met" or "not measured"
}

// goals evaluates the targets on the shapes measured.
func goals(res *results.Results) []goal {
	g := newGoalSet(res)
	g.memory()
	g.churn()
	g.skips()
	g.perf()
	g.wrongAnswers()
	out := append(g.out, thresholdGoals(res)...)
	return append(out, mesosGoals(res)...)
}

// goalSet gathers the cluster shapes' goals, in the table's order.
type goalSet struct {
	res       *results.Results
	byName    map[string]*results.ShapeResult
	perfShape *results.ShapeResult // the default fixture's, nil when not measured
	out       []goal
}

func newGoalSet(res *results.Results) *goalSet {
	g := &goalSet{res: res, byName: map[string]*results.ShapeResult{}}
	for _, sr := range res.Shapes {
		g.byName[sr.Shape.Name] = sr
		if sr.Perf != nil {
			g.perfShape = sr
		}
	}
	return g
}

// shapeLabel is "S2 headless-heavy, one namespace", or the name alone
// when the shape was not measured.
func (g *goalSet) shapeLabel(name string) string {
	if sr := g.byName[name]; sr != nil {
		return name + " " + sr.Shape.Title
	}
	return name
}

// ratio adds a goal of the form num / den ≤ limit.
func (g *goalSet) ratio(what, shape, goalText string, num, den, limit float64, unit string) *goal {
	gl := goal{What: what, Shape: shape, Goal: goalText, Met: "not measured", Measured: "–"}
	if num > 0 && den > 0 {
		r := num / den
		gl.Measured = toolreport.RatioOf(num, den, unit)
		gl.Met = toolreport.Met(r <= limit)
	}
	g.out = append(g.out, gl)
	return &g.out[len(g.out)-1]
}

// memory: the heap after GC on S1–S4.
func (g *goalSet) memory() {
	for _, name := range []string{"S1", "S2", "S3", "S4"} {
		var a, b float64
		if sr := g.byName[name]; sr != nil {
			a, b = float64(sr.Memory[server.KeyOurs].HeapInuse)/mib, float64(sr.Memory[server.KeyStock].HeapInuse)/mib
		}
		g.ratio("Go heap in use after a forced GC: kubeschema / stock", g.shapeLabel(name), "≤ 0.60", a, b, 0.6, "MiB")
	}
}

// churn: the peak RSS under churn on S1 and S2, the CPU per update on S2
// and S4.
func (g *goalSet) churn() {
	for _, name := range []string{"S1", "S2"} {
		var a, b float64
		if sr := g.byName[name]; sr != nil && sr.Churn != nil {
			a, b = float64(sr.Churn.PeakRSS[server.KeyOurs])/mib, float64(sr.Churn.PeakRSS[server.KeyStock])/mib
		}
		gl := g.ratio("peak RSS under EndpointSlice churn: kubeschema / stock", g.shapeLabel(name), "≤ 0.80", a, b, 0.8, "MiB")
		if sr := g.byName[name]; sr != nil && sr.Churn != nil && gl.Met != "not measured" {
			gl.Measured += fmt.Sprintf(" at %.0f updates/s", sr.Churn.Rate)
		}
	}
	for _, name := range []string{"S2", "S4"} {
		var a, b float64
		if sr := g.byName[name]; sr != nil && sr.Churn != nil && sr.Churn.Net != nil && sr.Churn.Net.Updates > 0 {
			n := sr.Churn.Net
			a, b = n.CPU[server.KeyOurs]/float64(n.Updates)*1e6, n.CPU[server.KeyStock]/float64(n.Updates)*1e6
		}
		g.ratio("server CPU per EndpointSlice update, net of queries: kubeschema / stock", g.shapeLabel(name), "≤ 0.50", a, b, 0.5, "µs")
	}
}

// skips: every annotation-only update skipped, on every shape measured.
func (g *goalSet) skips() {
	skips := goal{What: "updates that change nothing DNS reads (an annotation): skipped by kubeschema", Shape: "every shape measured", Goal: "all", Met: "not measured", Measured: "–"}
	var skipParts []string
	allSkipped, quiet := true, false
	for _, sr := range g.res.Shapes {
		if sr.Churn == nil || sr.Churn.Quiet == nil {
			continue
		}
		q := sr.Churn.Quiet
		n, ok := q.Skipped[server.KeyOurs]
		if !ok {
			continue
		}
		quiet = true
		allSkipped = allSkipped && n == q.Updates
		skipParts = append(skipParts, fmt.Sprintf("%s %d of %d", sr.Label(), n, q.Updates))
	}
	if quiet {
		skips.Measured, skips.Met = strings.Join(skipParts, "; "), toolreport.Met(allSkipped)
	}
	g.out = append(g.out, skips)
}

// perf: the TCP answer's size, the starts, CPU per query and allocations
// on the default fixture (the starts on S2).
func (g *goalSet) perf() {
	perfName := "S3"
	if g.perfShape != nil {
		perfName = g.perfShape.Shape.Name
	}
	var p *perf.Figures
	if g.perfShape != nil {
		p = g.perfShape.Perf
	}
	big := "1000-endpoint"
	if g.perfShape != nil && len(g.perfShape.Shape.BigHeadless) > 0 {
		big = fmt.Sprintf("%d-endpoint", g.perfShape.Shape.BigHeadless[len(g.perfShape.Shape.BigHeadless)-1])
	}
	g.ratio("answer size, "+big+" headless A over TCP: kubeschema / stock", g.shapeLabel(perfName), "≤ 0.50",
		p.AnswerBytes(server.KeyOurs), p.AnswerBytes(server.KeyStock), 0.5, "bytes")
	g.starts()
	// cpu is a CPU-per-query ratio of medians, with the range of the
	// per-round ratios (the targets ran back to back in each round).
	cpu := func(what, goalText, test, num, den string, limit float64) {
		gl := g.ratio(what, g.shapeLabel(perfName), goalText, p.SummaryOf(test, num).CPU, p.SummaryOf(test, den).CPU, limit, "µs")
		if lo, hi, ok := p.RoundRatios(test, num, den); ok {
			gl.Measured += fmt.Sprintf("; rounds %.2f–%.2f", lo, hi)
		}
	}
	cpu("CPU per query, cluster mix over UDP: kubeschema / stock", "≤ 0.75", perf.TestMixed, server.KeyOurs, server.KeyStock, 0.75)
	cpu("CPU per query, cluster mix over UDP: kubeschema / floor", "≤ 1.02", perf.TestMixed, server.KeyOurs, server.KeyFloor, 1.02)
	g.allocs(p, perfName)
}

// starts: the start to the first complete answer on S2, alone and together.
func (g *goalSet) starts() {
	first := goal{What: "start to first complete answer, each started alone: kubeschema / stock", Shape: g.shapeLabel("S2"), Goal: "≤ 0.80", Met: "not measured", Measured: "–"}
	if sr := g.byName["S2"]; sr != nil && sr.FirstAnswerMedian(server.KeyOurs) > 0 && sr.FirstAnswerMedian(server.KeyStock) > 0 {
		a, b := sr.FirstAnswerMedian(server.KeyOurs), sr.FirstAnswerMedian(server.KeyStock)
		first.Measured = fmt.Sprintf("%.2f (%.2f s / %.2f s, medians of %d starts each)", a/b, a, b, len(sr.FirstAnswer[server.KeyOurs]))
		first.Met = toolreport.Met(a <= 0.8*b)
	}
	g.out = append(g.out, first)
	first = goal{What: "start to first complete answer, both started at the same moment: kubeschema / stock", Shape: g.shapeLabel("S2"), Goal: "≤ 0.80", Met: "not measured", Measured: "–"}
	if sr := g.byName["S2"]; sr != nil && perf.Median(sr.Together[server.KeyOurs]) > 0 && perf.Median(sr.Together[server.KeyStock]) > 0 {
		a, b := perf.Median(sr.Together[server.KeyOurs]), perf.Median(sr.Together[server.KeyStock])
		first.Measured = fmt.Sprintf("%.2f (%.2f s / %.2f s, medians of %d starts)", a/b, a, b, len(sr.Together[server.KeyOurs]))
		first.Met = toolreport.Met(a <= 0.8*b)
	}
	g.out = append(g.out, first)
}

// allocs: the allocations of the in-process ServeDNS. The worst positive
// answer of the mix, not the best: a headless A, an SRV or a PTR answer
// has more to render than a ClusterIP A.
func (g *goalSet) allocs(p *perf.Figures, perfName string) {
	alloc := goal{What: "allocations per cached positive answer (in-process ServeDNS, the most of ClusterIP A, headless A, SRV, PTR)",
		Shape: g.shapeLabel(perfName), Goal: "≤ 2", Met: "not measured", Measured: "–"}
	worst, worstCase := int64(-1), ""
	for _, kase := range []string{"ClusterIP A", "headless A", "SRV", "PTR"} {
		if gb, ok := p.GoBenchOf("kubeschema", kase); ok && gb.AllocsPerOp > worst {
			worst, worstCase = gb.AllocsPerOp, kase
		}
	}
	if worst >= 0 {
		alloc.Measured = fmt.Sprintf("%d allocs/op (%s)", worst, worstCase)
		alloc.Met = toolreport.Met(worst <= 2)
	}
	g.out = append(g.out, alloc)
}

// wrongAnswers: none under churn, on every shape but the threshold
// shape's runs, which have rows of their own (thresholdGoals).
func (g *goalSet) wrongAnswers() {
	wrongs := goal{What: "wrong answers under EndpointSlice churn: kubeschema", Shape: "every shape measured", Goal: "0", Met: "not measured", Measured: "–"}
	if slices.ContainsFunc(g.res.Shapes, func(sr *results.ShapeResult) bool { return sr.Run != nil }) {
		wrongs.Shape = "every other shape measured"
	}
	var parts []string
	total, answers := 0, 0
	for _, sr := range g.res.Shapes {
		if sr.Churn == nil || sr.Run != nil {
			continue
		}
		c := sr.Churn.Check[server.KeyOurs]
		total, answers = total+c.Wrong+c.StaleAtEnd, answers+c.Answers
		parts = append(parts, fmt.Sprintf("%s %d of %s", sr.Shape.Name, c.Wrong, toolreport.Thousands(c.Answers)))
		if c.StaleAtEnd > 0 {
			parts[len(parts)-1] += fmt.Sprintf(", %d stale at the end", c.StaleAtEnd)
		}
	}
	if answers > 0 {
		wrongs.Measured, wrongs.Met = strings.Join(parts, "; "), toolreport.Met(total == 0)
	}
	g.out = append(g.out, wrongs)
}

const mib = 1 << 20
