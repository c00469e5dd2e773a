package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The chart: small panels of grouped bars, one group per scale, drawn as
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
	// goal is the target for the first series, per group (NaN:
	// none), drawn as a dashed line over its bar.
	goal []float64
}

var (
	seriesA = series{"A", "kubeschema", "#2b6cb0"}
	seriesB = series{"B", "stock kubernetes", "#dd6b20"}
	seriesC = series{"C", "whoami floor", "#a0aec0"}
	seriesD = series{"D", "multicluster", "#2f855a"}
	seriesE = series{"E", "stock multicluster", "#c05621"}
)

// panels are the chart's panels for the figures present.
func panels(res *results) []panel {
	var groups []string
	for _, sr := range res.Scales {
		groups = append(groups, thousands(sr.Services)+" services")
	}
	perf := func(test string, ss ...series) [][]float64 {
		return values(res, ss, func(sr *scaleResult, key string) float64 { return nanIfZero(sr.summaryOf(test, key).CPU) })
	}
	// goalOf is the target for the first series: the lower of floor and
	// stock times their factors (a factor of 0 leaves that one out).
	goalOf := func(v [][]float64, fFloor, fStock float64, cap float64) []float64 {
		out := make([]float64, len(v))
		for g, row := range v {
			out[g] = cap
			if fStock > 0 {
				out[g] = math.Min(out[g], fStock*row[1])
			}
			if fFloor > 0 {
				out[g] = math.Min(out[g], fFloor*row[2])
			}
		}
		return out
	}
	mixed, tcp := perf(testMixed, seriesA, seriesB, seriesC), perf(testTCP, seriesA, seriesB)
	rss := values(res, []series{seriesA, seriesB}, func(sr *scaleResult, key string) float64 {
		return nanIfZero(float64(sr.Memory[key].RSS) / mib)
	})
	p99 := values(res, []series{seriesA, seriesB}, func(sr *scaleResult, key string) float64 {
		if sr.Latency[key].Changes == 0 {
			return math.NaN()
		}
		return sr.Latency[key].P99
	})
	out := []panel{
		{"server CPU per query, cluster mix (µs)", groups, []series{seriesA, seriesB, seriesC}, mixed, "%.1f", goalOf(mixed, 1.05, 0.90, math.Inf(1))},
		{"server CPU per query, 1000-endpoint headless, TCP (µs)", groups, []series{seriesA, seriesB}, tcp, "%.0f", goalOf(tcp, 0, 1.0/3, math.Inf(1))},
		{"resident memory after sync (MiB)", groups, []series{seriesA, seriesB}, rss, "%.0f", goalOf(rss, 0, 0.6, math.Inf(1))},
		{"DNS programming latency p99 (ms)", groups, []series{seriesA, seriesB}, p99, "%.1f", goalOf(p99, 0, 1, 100)},
	}
	if hasTest(res, testMC) {
		mc := perf(testMC, seriesD, seriesE, seriesC)
		out = append(out, panel{"server CPU per query, clusterset mix (µs)", groups, []series{seriesD, seriesE, seriesC}, mc, "%.1f", goalOf(mc, 1.05, 0.90, math.Inf(1))})
	}
	return out
}

func values(res *results, ss []series, get func(*scaleResult, string) float64) [][]float64 {
	out := make([][]float64, len(res.Scales))
	for g, sr := range res.Scales {
		for _, s := range ss {
			out[g] = append(out[g], get(sr, s.key))
		}
	}
	return out
}

func nanIfZero(x float64) float64 {
	if x == 0 {
		return math.NaN()
	}
	return x
}

func hasTest(res *results, test string) bool {
	for _, sr := range res.Scales {
		if len(sr.Runs[test]) > 0 {
			return true
		}
	}
	return false
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
func chart(res *results) string {
	ps := panels(res)
	rows := (len(ps) + columns - 1) / columns
	w, h := panelW*columns, panelH*rows+headerH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	caption := fmt.Sprintf("schemadns benchmarks, %s, %d CPUs; medians of %d rounds; dashed: the issue's target for ours", res.Started.UTC().Format("2006-01-02"), res.Machine.CPUs, res.Rounds)
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
		fmt.Fprintf(b, `<rect x="%d" y="26" width="10" height="10" fill="%s"/><text x="%d" y="35">%s %s</text>`+"\n", lx, s.color, lx+14, s.key, html.EscapeString(s.name))
		lx += 22 + 7*len(s.key+s.name)
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
			plotLeft, right, y(v), y(v), plotLeft-4, y(v)+4, trimFloat(v))
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

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
