package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// summary is a test's figures for one target: medians over the rounds.
type summary struct {
	n                   int
	CPU, CPUMin, CPUMax float64 // µs per answered query
	P50, P90, P99       float64 // ms
	QPS, Other          float64
	Sent, Completed     int
	Rcodes              map[string]int
}

func summarizeRuns(runs []perfResult) summary {
	s := summary{n: len(runs), Rcodes: map[string]int{}, CPUMin: math.Inf(1)}
	if len(runs) == 0 {
		return summary{}
	}
	var cpu, p50, p90, p99, qps, other []float64
	for _, r := range runs {
		cpu, p50, p90, p99 = append(cpu, r.CPUPerQuery), append(p50, r.P50), append(p90, r.P90), append(p99, r.P99)
		qps, other = append(qps, r.QPS), append(other, r.OtherBusy)
		s.CPUMin, s.CPUMax = min(s.CPUMin, r.CPUPerQuery), max(s.CPUMax, r.CPUPerQuery)
		s.Sent, s.Completed = s.Sent+r.Sent, s.Completed+r.Completed
		for k, v := range r.Rcodes {
			s.Rcodes[k] += v
		}
	}
	s.CPU, s.P50, s.P90, s.P99 = median(cpu), median(p50), median(p90), median(p99)
	s.QPS, s.Other = median(qps), median(other)
	return s
}

// rcodeMix is "NOERROR 80%, NXDOMAIN 20%".
func (s summary) rcodeMix() string {
	total := 0
	var keys []string
	for k, v := range s.Rcodes {
		total += v
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", k, 100*float64(s.Rcodes[k])/float64(max(total, 1))))
	}
	return strings.Join(parts, ", ")
}

// summaryOf is the summary of a test and target at a scale (n == 0 when
// not measured).
func (sr *scaleResult) summaryOf(test, key string) summary {
	return summarizeRuns(sr.Runs[test][key])
}

// goBenchOf finds an in-process result.
func (sr *scaleResult) goBenchOf(plugin, kase string) (goBench, bool) {
	for _, b := range sr.GoBench {
		if b.Plugin == plugin && b.Case == kase {
			return b, true
		}
	}
	return goBench{}, false
}

// goal is one target ratio of the issue, evaluated.
type goal struct {
	What, Goal, Measured string
	Met                  string // "met", "not met" or "not measured"
}

// goals evaluates the targets on the largest scale measured.
func goals(res *results) []goal {
	if len(res.Scales) == 0 {
		return nil
	}
	sr := res.Scales[len(res.Scales)-1]
	at := fmt.Sprintf(" (at %s services", thousands(sr.Services))
	if sr.Services != 10000 {
		at += "; the goal is stated at 10k"
	}
	at += ")"
	var out []goal
	ratio := func(what, goalText string, num, den, limit float64) {
		g := goal{What: what + at, Goal: goalText, Met: "not measured", Measured: "–"}
		if num > 0 && den > 0 {
			r := num / den
			g.Measured = fmt.Sprintf("%.3f (%.2f / %.2f)", r, num, den)
			g.Met = metText(r <= limit)
		}
		out = append(out, g)
	}
	// cpu is a CPU-per-query ratio of medians, with the range of the
	// per-round ratios (the targets ran back to back in each round).
	cpu := func(what, goalText, test, num, den string, limit float64) {
		ratio(what, goalText, sr.summaryOf(test, num).CPU, sr.summaryOf(test, den).CPU, limit)
		if lo, hi, ok := sr.roundRatios(test, num, den); ok {
			out[len(out)-1].Measured += fmt.Sprintf("; rounds %.2f–%.2f", lo, hi)
		}
	}
	cpu("CPU per query, cluster mix: kubeschema / whoami floor", "≤ 1.05", testMixed, "A", "C", 1.05)
	cpu("CPU per query, cluster mix: kubeschema / stock", "≤ 0.90", testMixed, "A", "B", 0.90)
	cpu("CPU per query, 1000-endpoint headless over TCP: kubeschema / stock", "≤ 0.33", testTCP, "A", "B", 1.0/3)
	ma, mb := sr.Memory["A"], sr.Memory["B"]
	ratio(fmt.Sprintf("resident memory after sync, %s endpoints: kubeschema / stock", thousands(sr.Endpoints)), "≤ 0.60", float64(ma.RSS)/mib, float64(mb.RSS)/mib, 0.6)
	la, lb := sr.Latency["A"], sr.Latency["B"]
	lat := goal{What: "programming latency p99: kubeschema vs stock" + at, Goal: "≤ stock's, and < 100 ms", Met: "not measured", Measured: "–"}
	if la.Changes > 0 {
		lat.Measured = fmt.Sprintf("%.1f ms vs %.1f ms (timeouts %d vs %d)", la.P99, lb.P99, la.Timeouts, lb.Timeouts)
		lat.Met = metText(la.P99 <= lb.P99 && la.P99 < 100 && la.Timeouts <= lb.Timeouts)
	}
	out = append(out, lat)
	alloc := goal{What: "allocations per query, cached positive answer (in-process, ClusterIP A)" + at, Goal: "≤ 2", Met: "not measured", Measured: "–"}
	if gb, ok := sr.goBenchOf("kubeschema", "ClusterIP A"); ok {
		alloc.Measured = fmt.Sprintf("%d allocs/op", gb.AllocsPerOp)
		alloc.Met = metText(gb.AllocsPerOp <= 2)
	}
	out = append(out, alloc)
	cpu("CPU per query, clusterset mix: multicluster / whoami floor", "≤ 1.05", testMC, "D", "C", 1.05)
	cpu("CPU per query, clusterset mix: multicluster / stock multicluster", "≤ 0.90", testMC, "D", "E", 0.90)
	return out
}

// roundRatios is the lowest and highest ratio of num's CPU per query to
// den's within a round.
func (sr *scaleResult) roundRatios(test, num, den string) (lo, hi float64, ok bool) {
	a, b := sr.Runs[test][num], sr.Runs[test][den]
	lo, hi = math.Inf(1), 0
	for i := range min(len(a), len(b)) {
		if b[i].CPUPerQuery > 0 {
			r := a[i].CPUPerQuery / b[i].CPUPerQuery
			lo, hi, ok = min(lo, r), max(hi, r), true
		}
	}
	return lo, hi, ok
}

func metText(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

const mib = 1 << 20

// thousands is 10000 as "10k", 1500 as "1.5k", 999 as "999".
func thousands(n int) string {
	switch {
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprint(n)
}
