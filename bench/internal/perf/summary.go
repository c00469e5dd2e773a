package perf

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Summary is a test's figures for one target: medians over the rounds.
type Summary struct {
	n                   int
	CPU, CPUMin, CPUMax float64 // µs per answered query
	P50, P90, P99       float64 // ms
	QPS, Other          float64
	Sent, Completed     int
	Rcodes              map[string]int
}

func summarizeRuns(runs []Result) Summary {
	s := Summary{n: len(runs), Rcodes: map[string]int{}, CPUMin: math.Inf(1)}
	if len(runs) == 0 {
		return Summary{}
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
	s.CPU, s.P50, s.P90, s.P99 = Median(cpu), Median(p50), Median(p90), Median(p99)
	s.QPS, s.Other = Median(qps), Median(other)
	return s
}

// RcodeMix is "NOERROR 80%, NXDOMAIN 20%".
func (s Summary) RcodeMix() string {
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

// SummaryOf is the summary of a test and target (n == 0 when not
// measured).
func (p *Figures) SummaryOf(test, key string) Summary {
	if p == nil {
		return Summary{}
	}
	return summarizeRuns(p.Runs[test][key])
}

// GoBenchOf finds an in-process result.
func (p *Figures) GoBenchOf(plugin, kase string) (GoBench, bool) {
	if p == nil {
		return GoBench{}, false
	}
	for _, b := range p.GoBench {
		if b.Plugin == plugin && b.Case == kase {
			return b, true
		}
	}
	return GoBench{}, false
}

// AnswerBytes is the median size of a target's TCP answers.
func (p *Figures) AnswerBytes(key string) float64 {
	if p == nil {
		return 0
	}
	var xs []float64
	for _, r := range p.Runs[TestTCP][key] {
		xs = append(xs, r.AnswerBytes)
	}
	return Median(xs)
}

// RoundRatios is the lowest and highest ratio of num's CPU per query to
// den's within a round.
func (p *Figures) RoundRatios(test, num, den string) (lo, hi float64, ok bool) {
	if p == nil {
		return 0, 0, false
	}
	a, b := p.Runs[test][num], p.Runs[test][den]
	lo, hi = math.Inf(1), 0
	for i := range min(len(a), len(b)) {
		if b[i].CPUPerQuery > 0 {
			r := a[i].CPUPerQuery / b[i].CPUPerQuery
			lo, hi, ok = min(lo, r), max(hi, r), true
		}
	}
	return lo, hi, ok
}
