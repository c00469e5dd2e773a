package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// The chart: small panels of grouped bars, one group per shape, drawn as
// plain SVG from the figures.

// series is one target in a panel.
type series struct {
	key, name, color string
}

// panel is one bar chart: values[group][series], NaN where not measured.
type panel struct {
	title  string
	groups []string
	series []series
	values [][]float64
	format string // of the value labels
	// goal is the target for the first series (ours), per group (NaN:
	// none), drawn as a dashed line over its bar.
	goal []float64
}

var (
	seriesOurs  = series{server.KeyOurs, "kubeschema", "#2b6cb0"}
	seriesStock = series{server.KeyStock, "stock", "#dd6b20"}
	seriesFloor = series{server.KeyFloor, "floor", "#a0aec0"}
)

// panels are the chart's panels for the figures present: memory and
// start-up by shape, then the default fixture's CPU and TCP answer size.
func panels(res *results.Results) []panel {
	var groups []string
	var perfShape *results.ShapeResult
	for _, sr := range res.Shapes {
		groups = append(groups, sr.Short())
		if sr.Perf != nil {
			perfShape = sr
		}
	}
	pair := []series{seriesOurs, seriesStock}
	byShape := func(get func(sr *results.ShapeResult, key string) float64) [][]float64 {
		out := make([][]float64, len(res.Shapes))
		for g, sr := range res.Shapes {
			for _, s := range pair {
				out[g] = append(out[g], nanIfZero(get(sr, s.key)))
			}
		}
		return out
	}
	// goalOf is factor × stock (the second series) on the shapes named, or
	// on every shape when none is.
	goalOf := func(v [][]float64, factor float64, only ...string) []float64 {
		out := make([]float64, len(v))
		for g, row := range v {
			out[g] = math.NaN()
			if len(only) == 0 || slices.Contains(only, groups[g]) {
				out[g] = factor * row[1]
			}
		}
		return out
	}
	heap := byShape(func(sr *results.ShapeResult, k string) float64 { return float64(sr.Memory[k].HeapInuse) / mib })
	rss := byShape(func(sr *results.ShapeResult, k string) float64 { return float64(sr.Memory[k].RSS) / mib })
	peak := byShape(func(sr *results.ShapeResult, k string) float64 {
		if sr.Churn == nil {
			return 0
		}
		return float64(sr.Churn.PeakRSS[k]) / mib
	})
	first := byShape(func(sr *results.ShapeResult, k string) float64 { return sr.FirstAnswerMedian(k) })
	out := []panel{
		{"Go heap after GC (MiB)", groups, pair, heap, "%.0f", goalOf(heap, 0.6)},
		{"RSS after sync (MiB)", groups, pair, rss, "%.0f", goalOf(rss, math.NaN())},
		{"peak RSS under EndpointSlice churn (MiB)", groups, pair, peak, "%.0f", goalOf(peak, 0.8, "S1", "S2")},
		{"start to first complete answer, median (s)", groups, pair, first, "%.1f", goalOf(first, 1, "S2")},
	}
	if perfShape == nil {
		return out
	}
	p, name := perfShape.Perf, []string{perfShape.Shape.Name}
	cpu := [][]float64{{nanIfZero(p.SummaryOf(perf.TestMixed, server.KeyOurs).CPU), nanIfZero(p.SummaryOf(perf.TestMixed, server.KeyStock).CPU), nanIfZero(p.SummaryOf(perf.TestMixed, server.KeyFloor).CPU)}}
	cpuGoal := []float64{math.Min(0.75*cpu[0][1], 1.02*cpu[0][2])}
	bytes := [][]float64{{nanIfZero(p.AnswerBytes(server.KeyOurs) / 1024), nanIfZero(p.AnswerBytes(server.KeyStock) / 1024)}}
	return append(out,
		panel{"CPU per query, cluster mix over UDP (µs)", name, []series{seriesOurs, seriesStock, seriesFloor}, cpu, "%.1f", cpuGoal},
		panel{"largest headless A over TCP: answer size (KiB)", name, pair, bytes, "%.1f", []float64{0.5 * bytes[0][1]}},
	)
}

func nanIfZero(x float64) float64 {
	if x == 0 {
		return math.NaN()
	}
	return x
}

// Layout of the chart, in SVG units.
const (
	panelW, panelH = 440, 270
	columns        = 2
	plotTop        = 58 // below title and legend
	plotBottom     = 36 // group labels
	plotLeft       = 48
	headerH        = 48 // caption and note
)

// chart draws the panels in a grid.
func chart(res *results.Results) string {
	ps := panels(res)
	rows := (len(ps) + columns - 1) / columns
	w, h := panelW*columns, panelH*rows+headerH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	caption := fmt.Sprintf("schemadns benchmarks, %s, scale %s, %d CPUs; dashed: the target for kubeschema", res.Started.UTC().Format("2006-01-02"), res.Scale, res.Machine.CPUs)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(caption))
	if res.Note != "" {
		fmt.Fprintf(&b, `<text x="10" y="38" font-size="12" fill="#c53030">%s</text>`+"\n", html.EscapeString(res.Note))
	}
	for i, p := range ps {
		x, y := (i%columns)*panelW, headerH+(i/columns)*panelH
		drawPanel(&b, p, x, y)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, p panel, x0, y0 int) {
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
	fmt.Fprintf(b, `<text x="%d" y="16" font-size="12" font-weight="bold">%s</text>`+"\n", plotLeft-30, html.EscapeString(p.title))
	lx := plotLeft - 30
	for _, s := range p.series {
		fmt.Fprintf(b, `<rect x="%d" y="26" width="10" height="10" fill="%s"/><text x="%d" y="35">%s</text>`+"\n", lx, s.color, lx+14, html.EscapeString(s.name))
		lx += 22 + 7*len(s.name)
	}
	top, bottom := float64(plotTop), float64(panelH-plotBottom)
	right := float64(panelW - 16)
	maxV := 0.0
	for g, row := range p.values {
		for _, v := range append(row, p.goal[g]) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				maxV = max(maxV, v)
			}
		}
	}
	scale := niceCeil(maxV * 1.12)
	y := func(v float64) float64 { return bottom - (bottom-top)*v/scale }
	for i := 0; i <= 4; i++ {
		v := scale * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#e2e8f0"/><text x="%d" y="%.1f" text-anchor="end" fill="#4a5568">%s</text>`+"\n",
			plotLeft, right, y(v), y(v), plotLeft-4, y(v)+4, toolreport.Trim(v))
	}
	if len(p.groups) == 0 {
		b.WriteString("</g>\n")
		return
	}
	gw := (right - plotLeft) / float64(len(p.groups))
	bw := math.Min(40, gw*0.8/float64(len(p.series)))
	for g, name := range p.groups {
		gx := plotLeft + gw*float64(g) + (gw-bw*float64(len(p.series)))/2
		for s, ser := range p.series {
			v := p.values[g][s]
			bx := gx + bw*float64(s)
			if math.IsNaN(v) {
				fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#a0aec0">n/a</text>`+"\n", bx+bw/2, bottom-4)
				continue
			}
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", bx+1, y(v), bw-2, bottom-y(v), ser.color)
			top := y(v)
			if goal := p.goal[g]; s == 0 && !math.IsNaN(goal) && !math.IsInf(goal, 0) {
				top = math.Min(top, y(goal)) // the label clears the goal line
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", bx+bw/2, top-4, fmt.Sprintf(p.format, v))
		}
		if goal := p.goal[g]; !math.IsNaN(goal) && !math.IsInf(goal, 0) && !math.IsNaN(p.values[g][0]) {
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#c53030" stroke-width="2" stroke-dasharray="4,3"/>`+"\n", gx-4, gx+bw+4, y(goal), y(goal))
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#2d3748">%s</text>`+"\n", plotLeft+gw*float64(g)+gw/2, bottom+16, html.EscapeString(name))
	}
	fmt.Fprintf(b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#4a5568"/>`+"\n", plotLeft, right, bottom, bottom)
	b.WriteString("</g>\n")
}

// niceCeil rounds up to a round multiple of a power of ten.
func niceCeil(x float64) float64 {
	if x <= 0 || math.IsNaN(x) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
