package main

import (
	"fmt"
	"math"
	"strings"
)

// chart is docs/overload.svg: for each upstream, cluster answers/s and the
// p99 of answered cluster queries against the offered load, a line per
// server.
func chart(res *results) string {
	const pw, ph, pad = 360, 220, 60
	ups := res.upstreams()
	w, h := 2*(pw+pad)+pad, len(ups)*(ph+pad+30)+70
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, up := range ups {
		y0 := 40 + i*(ph+pad+30)
		panel(&b, res, up, "cluster answers/s — "+upstreamText(up), pad, y0, pw, ph, func(r *runResult) float64 { return r.clusterGoodput() })
		panel(&b, res, up, "p99 ms, answered cluster queries — "+upstreamText(up), 2*pad+pw, y0, pw, ph, func(r *runResult) float64 { return r.P99 })
	}
	for j, key := range res.servers() {
		x := pad + j*170
		fmt.Fprintf(&b, `<line x1="%d" y1="18" x2="%d" y2="18" stroke="%s" stroke-width="2"/><text x="%d" y="22">%s</text>`+"\n", x, x+20, color(key), x+25, key)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func color(key string) string {
	return map[string]string{keyOurs: "#1b7837", keyOursPlain: "#7fbf7b", keyStock: "#762a83", keyStockShed: "#c2a5cf"}[key]
}

func panel(b *strings.Builder, res *results, up, title string, x0, y0, w, h int, value func(*runResult) float64) {
	mults := res.multiples()
	if len(mults) == 0 {
		return
	}
	top := 0.0
	for _, r := range res.Runs {
		if r.Upstream == up {
			top = math.Max(top, value(r))
		}
	}
	top = niceCeil(top)
	xmax := mults[len(mults)-1]
	px := func(m float64) float64 { return float64(x0) + float64(w)*m/xmax }
	py := func(v float64) float64 { return float64(y0+h) - float64(h)*v/top }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, y0-8, title)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, y0, w, h)
	for k := 0; k <= 4; k++ {
		v := top * float64(k) / 4
		fmt.Fprintf(b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", x0-4, py(v)+4, trimNum(v))
	}
	for _, m := range mults {
		fmt.Fprintf(b, `<text x="%.0f" y="%d" text-anchor="middle">%g×</text>`+"\n", px(m), y0+h+14, m)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">offered load, × ours's saturation</text>`+"\n", x0+w/2, y0+h+28)
	for _, key := range res.servers() {
		var pts []string
		for _, m := range mults {
			if r := res.find(key, up, m); r != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(m), py(value(r))))
			}
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color(key), strings.Join(pts, " "))
	}
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5, 10} {
		if x <= f*p {
			return f * p
		}
	}
	return 10 * p
}

func trimNum(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0fk", v/1000)
	}
	return fmt.Sprintf("%g", math.Round(v*100)/100)
}
