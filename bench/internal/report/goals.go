package report

import (
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"

	"fmt"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/test/toolreport"
)

// goal is one target, evaluated on the shape it is stated for.
type goal struct {
	What, Shape, Goal, Measured string
	Met                         string // "met", "not met" or "not measured"
}

// goals evaluates the targets on the shapes measured.
func goals(res *results.Results) []goal {
	byName := map[string]*results.ShapeResult{}
	var perfShape *results.ShapeResult
	for _, sr := range res.Shapes {
		byName[sr.Shape.Name] = sr
		if sr.Perf != nil {
			perfShape = sr
		}
	}
	shapeLabel := func(name string) string {
		if sr := byName[name]; sr != nil {
			return name + " " + sr.Shape.Title
		}
		return name
	}
	var out []goal
	// ratio adds a goal of the form num / den ≤ limit.
	ratio := func(what, shape, goalText string, num, den, limit float64, unit string) *goal {
		g := goal{What: what, Shape: shape, Goal: goalText, Met: "not measured", Measured: "–"}
		if num > 0 && den > 0 {
			r := num / den
			g.Measured = toolreport.RatioOf(num, den, unit)
			g.Met = toolreport.Met(r <= limit)
		}
		out = append(out, g)
		return &out[len(out)-1]
	}
	for _, name := range []string{"S1", "S2", "S3", "S4"} {
		var a, b float64
		if sr := byName[name]; sr != nil {
			a, b = float64(sr.Memory[server.KeyOurs].HeapInuse)/mib, float64(sr.Memory[server.KeyStock].HeapInuse)/mib
		}
		ratio("Go heap in use after a forced GC: kubeschema / stock", shapeLabel(name), "≤ 0.60", a, b, 0.6, "MiB")
	}
	for _, name := range []string{"S1", "S2"} {
		var a, b float64
		if sr := byName[name]; sr != nil && sr.Churn != nil {
			a, b = float64(sr.Churn.PeakRSS[server.KeyOurs])/mib, float64(sr.Churn.PeakRSS[server.KeyStock])/mib
		}
		g := ratio("peak RSS under EndpointSlice churn: kubeschema / stock", shapeLabel(name), "≤ 0.80", a, b, 0.8, "MiB")
		if sr := byName[name]; sr != nil && sr.Churn != nil && g.Met != "not measured" {
			g.Measured += fmt.Sprintf(" at %.0f updates/s", sr.Churn.Rate)
		}
	}
	for _, name := range []string{"S2", "S4"} {
		var a, b float64
		if sr := byName[name]; sr != nil && sr.Churn != nil && sr.Churn.Net != nil && sr.Churn.Net.Updates > 0 {
			n := sr.Churn.Net
			a, b = n.CPU[server.KeyOurs]/float64(n.Updates)*1e6, n.CPU[server.KeyStock]/float64(n.Updates)*1e6
		}
		ratio("server CPU per EndpointSlice update, net of queries: kubeschema / stock", shapeLabel(name), "≤ 0.50", a, b, 0.5, "µs")
	}
	skips := goal{What: "updates that change nothing DNS reads (an annotation): skipped by kubeschema", Shape: "every shape measured", Goal: "all", Met: "not measured", Measured: "–"}
	var skipParts []string
	allSkipped, quiet := true, false
	for _, sr := range res.Shapes {
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
	out = append(out, skips)
	perfName := "S3"
	if perfShape != nil {
		perfName = perfShape.Shape.Name
	}
	var p *perf.Figures
	if perfShape != nil {
		p = perfShape.Perf
	}
	big := "1000-endpoint"
	if perfShape != nil && len(perfShape.Shape.BigHeadless) > 0 {
		big = fmt.Sprintf("%d-endpoint", perfShape.Shape.BigHeadless[len(perfShape.Shape.BigHeadless)-1])
	}
	ratio("answer size, "+big+" headless A over TCP: kubeschema / stock", shapeLabel(perfName), "≤ 0.50",
		p.AnswerBytes(server.KeyOurs), p.AnswerBytes(server.KeyStock), 0.5, "bytes")
	first := goal{What: "start to first complete answer, each started alone: kubeschema / stock", Shape: shapeLabel("S2"), Goal: "≤ 0.80", Met: "not measured", Measured: "–"}
	if sr := byName["S2"]; sr != nil && sr.FirstAnswerMedian(server.KeyOurs) > 0 && sr.FirstAnswerMedian(server.KeyStock) > 0 {
		a, b := sr.FirstAnswerMedian(server.KeyOurs), sr.FirstAnswerMedian(server.KeyStock)
		first.Measured = fmt.Sprintf("%.2f (%.2f s / %.2f s, medians of %d starts each)", a/b, a, b, len(sr.FirstAnswer[server.KeyOurs]))
		first.Met = toolreport.Met(a <= 0.8*b)
	}
	out = append(out, first)
	first = goal{What: "start to first complete answer, both started at the same moment: kubeschema / stock", Shape: shapeLabel("S2"), Goal: "≤ 0.80", Met: "not measured", Measured: "–"}
	if sr := byName["S2"]; sr != nil && perf.Median(sr.Together[server.KeyOurs]) > 0 && perf.Median(sr.Together[server.KeyStock]) > 0 {
		a, b := perf.Median(sr.Together[server.KeyOurs]), perf.Median(sr.Together[server.KeyStock])
		first.Measured = fmt.Sprintf("%.2f (%.2f s / %.2f s, medians of %d starts)", a/b, a, b, len(sr.Together[server.KeyOurs]))
		first.Met = toolreport.Met(a <= 0.8*b)
	}
	out = append(out, first)
	// cpu is a CPU-per-query ratio of medians, with the range of the
	// per-round ratios (the targets ran back to back in each round).
	cpu := func(what, goalText, test, num, den string, limit float64) {
		g := ratio(what, shapeLabel(perfName), goalText, p.SummaryOf(test, num).CPU, p.SummaryOf(test, den).CPU, limit, "µs")
		if lo, hi, ok := p.RoundRatios(test, num, den); ok {
			g.Measured += fmt.Sprintf("; rounds %.2f–%.2f", lo, hi)
		}
	}
	cpu("CPU per query, cluster mix over UDP: kubeschema / stock", "≤ 0.75", perf.TestMixed, server.KeyOurs, server.KeyStock, 0.75)
	cpu("CPU per query, cluster mix over UDP: kubeschema / floor", "≤ 1.02", perf.TestMixed, server.KeyOurs, server.KeyFloor, 1.02)
	// The worst positive answer of the mix, not the best: a headless A, an
	// SRV or a PTR answer has more to render than a ClusterIP A.
	alloc := goal{What: "allocations per cached positive answer (in-process ServeDNS, the most of ClusterIP A, headless A, SRV, PTR)",
		Shape: shapeLabel(perfName), Goal: "≤ 2", Met: "not measured", Measured: "–"}
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
	out = append(out, alloc)
	// The threshold shape's runs have rows of their own (thresholdGoals).
	wrongs := goal{What: "wrong answers under EndpointSlice churn: kubeschema", Shape: "every shape measured", Goal: "0", Met: "not measured", Measured: "–"}
	if slices.ContainsFunc(res.Shapes, func(sr *results.ShapeResult) bool { return sr.Run != nil }) {
		wrongs.Shape = "every other shape measured"
	}
	var parts []string
	total, answers := 0, 0
	for _, sr := range res.Shapes {
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
	out = append(out, wrongs)
	out = append(out, thresholdGoals(res)...)
	return append(out, mesosGoals(res)...)
}

const mib = 1 << 20
