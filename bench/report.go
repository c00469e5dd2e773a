package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// writeReport writes docs/benchmarks.md, the chart it embeds and the raw
// figures.
func writeReport(cfg *config, res *results) error {
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"benchmarks.md":   []byte(markdown(res)),
		"benchmarks.svg":  []byte(chart(res)),
		"benchmarks.json": append(raw, '\n'),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(cfg.outDir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// rewrite writes the page and the chart again from the raw figures.
func rewrite(cfg *config) error {
	b, err := os.ReadFile(filepath.Join(cfg.outDir, "benchmarks.json"))
	if err != nil {
		return err
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("benchmarks.json: %w", err)
	}
	return writeReport(cfg, &res)
}

// md builds the page.
type md struct{ strings.Builder }

func (b *md) p(format string, args ...any) { fmt.Fprintf(b, format+"\n\n", args...) }
func (b *md) line(format string, args ...any) {
	fmt.Fprintf(b, format+"\n", args...)
}

// table writes a Markdown table.
func (b *md) table(head []string, rows [][]string) {
	b.line("| %s |", strings.Join(head, " | "))
	seps := make([]string, len(head))
	for i := range seps {
		seps[i] = "---"
		if i > 0 {
			seps[i] = "--:"
		}
	}
	b.line("|%s|", strings.Join(seps, "|"))
	for _, r := range rows {
		b.line("| %s |", strings.Join(r, " | "))
	}
	b.line("")
}

func markdown(res *results) string {
	var b md
	b.p("# Benchmarks")
	b.p("<!-- Written by the bench tool (bench/, `make bench`) with benchmarks.svg and benchmarks.json. Do not edit by hand: run it again. -->")
	if res.Note != "" {
		b.p("> **%s**", res.Note)
	}
	b.p("Run of %s, %s. Command: `%s` (what `make bench` runs, from the repository's top directory).",
		res.Started.UTC().Format("2006-01-02 15:04 UTC"), res.Finished.Sub(res.Started).Round(time.Second), res.Command)
	writeMachine(&b, res)
	writeGoals(&b, res)
	b.p("![CPU per query, memory and programming latency of kubeschema, the stock kubernetes plugin and the whoami floor](benchmarks.svg)")
	for _, sr := range res.Scales {
		writeScale(&b, res, sr)
	}
	writeMethod(&b, res)
	writeReproduce(&b, res)
	if len(res.Errors) > 0 {
		b.p("## Errors")
		for _, e := range res.Errors {
			b.line("- %s", e)
		}
		b.line("")
	}
	return b.String()
}

func writeMachine(b *md, res *results) {
	m := res.Machine
	b.p("## Machine")
	b.table([]string{"", ""}, [][]string{
		{"CPU (/proc/cpuinfo)", fmt.Sprintf("%s, %s MHz", m.CPUModel, m.CPUMHz)},
		{"CPUs (nproc)", fmt.Sprint(m.CPUs)},
		{"memory (MemTotal)", m.MemTotal},
		{"kernel", m.Kernel},
		{"Go", m.GoVersion},
		{"dnsperf", m.Dnsperf + " (Debian)"},
		{"load average (1, 5, 15 min) at start / end", m.LoadStart + " / " + m.LoadEnd},
		{"pinning", res.Pinning},
	})
}

func writeGoals(b *md, res *results) {
	b.p("## Targets (issue 5)")
	var rows [][]string
	for _, g := range goals(res) {
		rows = append(rows, []string{g.What, g.Goal, g.Measured, "**" + g.Met + "**"})
	}
	b.table([]string{"target", "goal", "measured", ""}, rows)
	if res.Multicluster != "measured" {
		b.p("Multicluster: %s.", res.Multicluster)
	}
}

func writeScale(b *md, res *results, sr *scaleResult) {
	b.p("## %s services", thousands(sr.Services))
	b.p("%d ClusterIP and %d headless services with %d endpoints each, headless services of %s endpoints, %s endpoints in all; %s pods (`pods verified`); %d ServiceImports.",
		sr.Services-sr.Headless, sr.Headless, res.endpointsPer(sr), joinInts(sr.HeadlessSizes), thousands(sr.Endpoints), thousands(sr.Pods), sr.Imports)
	perfTable(b, res, sr, testMixed, fmt.Sprintf("### Cluster mix over UDP at %d queries/s", sr.Rates[testMixed]), "C", "B")
	tcpTitle := fmt.Sprintf("### %s A over TCP (whole answer) at %d queries/s", bigName(sr), sr.Rates[testTCP])
	if s := sr.Runs[testTCP]["B"]; len(s) > 0 && s[0].AnswerBytes > 0 {
		tcpTitle += fmt.Sprintf(" (answers of %.0f bytes)", s[0].AnswerBytes)
	}
	perfTable(b, res, sr, testTCP, tcpTitle, "", "B")
	if _, ok := sr.Runs[testMC]; ok {
		perfTable(b, res, sr, testMC, fmt.Sprintf("### Clusterset mix over UDP at %d queries/s", sr.Rates[testMC]), "C", "E")
	}
	writeSaturation(b, res, sr)
	writeMemory(b, res, sr)
	writeLatency(b, res, sr)
	writeGoBench(b, sr)
	if len(sr.CrossCheck) > 0 {
		b.p("#### Same answers?")
		for _, c := range sr.CrossCheck {
			b.line("- %s: %d of %d distinct queries of the mix answered differently (rcode or answer records, TTL and order aside).", c.Pair, c.Differing, c.Compared)
			for _, ex := range c.Examples {
				b.line("  - `%s`", ex)
			}
		}
		b.line("")
	}
}

func (res *results) endpointsPer(sr *scaleResult) int {
	n := sr.Endpoints
	for _, s := range sr.HeadlessSizes {
		n -= s
	}
	return n / max(sr.Services, 1)
}

func bigName(sr *scaleResult) string {
	return fmt.Sprintf("headless-%d", sr.HeadlessSizes[len(sr.HeadlessSizes)-1])
}

// perfTable is a fixed-load test: medians over the rounds, with the ratios
// to the floor and to stock.
func perfTable(b *md, res *results, sr *scaleResult, test, title, floor, stock string) {
	runs := sr.Runs[test]
	if len(runs) == 0 {
		return
	}
	b.p("%s", title)
	fl, st := sr.summaryOf(test, floor), sr.summaryOf(test, stock)
	var rows [][]string
	for _, key := range sr.Order[test] {
		s := sr.summaryOf(test, key)
		rows = append(rows, []string{
			key + " " + res.Targets[key],
			fmt.Sprintf("**%.1f** (%.1f–%.1f)", s.CPU, s.CPUMin, s.CPUMax),
			ratioText(s.CPU, fl.CPU), ratioText(s.CPU, st.CPU),
			fmt.Sprintf("%.3f", s.P50), fmt.Sprintf("%.3f", s.P90), fmt.Sprintf("%.3f", s.P99),
			fmt.Sprintf("%.2f%%", 100*float64(s.Completed)/float64(max(s.Sent, 1))),
			s.rcodeMix(), fmt.Sprintf("%.0f%%", 100*s.Other),
		})
	}
	b.table([]string{"target", "server CPU µs/query, median (min–max)", "× floor", "× stock", "p50 ms", "p90 ms", "p99 ms", "answered", "rcodes", "other processes on server CPU"}, rows)
}

func ratioText(x, y float64) string {
	if x == 0 || y == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", x/y)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func writeSaturation(b *md, res *results, sr *scaleResult) {
	runs := sr.Runs[testSaturated]
	if len(runs) == 0 {
		return
	}
	b.p("### Saturation: cluster mix over UDP, as fast as dnsperf sends")
	var rows [][]string
	for _, key := range sr.Order[testSaturated] {
		s := sr.summaryOf(testSaturated, key)
		rows = append(rows, []string{key + " " + res.Targets[key], fmt.Sprintf("%.0f", s.QPS), fmt.Sprintf("%.1f", s.CPU),
			fmt.Sprintf("%.2f%%", 100*float64(s.Completed)/float64(max(s.Sent, 1)))})
	}
	b.table([]string{"target", "queries/s (median)", "server CPU µs/query", "answered"}, rows)
	b.p("dnsperf has one CPU, as the server does; when the queries per second of the floor and the plugins are close, the load generator is the limit, and CPU per query is the figure that tells the plugins apart.")
}

func writeMemory(b *md, res *results, sr *scaleResult) {
	if len(sr.Memory) == 0 {
		return
	}
	b.p("### Memory after sync (one process per plugin)")
	var rows [][]string
	for _, key := range sortedKeys(sr.Memory) {
		m := sr.Memory[key]
		rows = append(rows, []string{key + " " + res.Targets[key], fmt.Sprintf("**%.1f**", float64(m.RSS)/mib),
			fmt.Sprintf("%.1f", float64(m.PeakRSS)/mib), fmt.Sprintf("%.1f", float64(m.HeapInuse)/mib), fmt.Sprintf("%.1f", sr.SyncSeconds[key])})
	}
	b.table([]string{"target", "RSS MiB", "peak RSS MiB", "Go heap in use MiB", "start to synced, s"}, rows)
}

func writeLatency(b *md, res *results, sr *scaleResult) {
	if len(sr.Latency) == 0 {
		return
	}
	b.p("### DNS programming latency (%d changes through the API)", res.Changes)
	var rows [][]string
	for _, key := range sortedKeys(sr.Latency) {
		l := sr.Latency[key]
		var kinds []string
		for _, k := range sortedKeys(l.ByKind) {
			kinds = append(kinds, fmt.Sprintf("%s %.1f", k, l.ByKind[k]))
		}
		rows = append(rows, []string{key + " " + res.Targets[key], fmt.Sprintf("%.1f", l.P50), fmt.Sprintf("%.1f", l.P90),
			fmt.Sprintf("**%.1f**", l.P99), fmt.Sprintf("%.1f", l.Max), fmt.Sprint(l.Timeouts), strings.Join(kinds, "; ")})
	}
	b.table([]string{"plugin", "p50 ms", "p90 ms", "p99 ms", "max ms", "timeouts (10 s)", "median by change, ms"}, rows)
	if p := sr.LatencyPaired; p.Changes > 0 {
		b.p("Change by change (both servers see the same watch event, so this cancels the API server's share): %s median %+.2f ms; A showed the change no later than B in %.0f%% of %d changes. Polling is every millisecond, so differences under about 1 ms are resolution.",
			p.Pair, p.MedianMs, 100*p.FirstWins, p.Changes)
	}
}

func writeGoBench(b *md, sr *scaleResult) {
	if len(sr.GoBench) == 0 {
		return
	}
	b.p("### In-process ServeDNS (go test -bench, one CPU)")
	var cases []string
	plugins := []string{"kubeschema", "kubernetes", "whoami"}
	for _, g := range sr.GoBench {
		if !slices.Contains(cases, g.Case) {
			cases = append(cases, g.Case)
		}
	}
	var rows [][]string
	for _, c := range cases {
		row := []string{c}
		for _, p := range plugins {
			g, ok := sr.goBenchOf(p, c)
			if !ok {
				row = append(row, "–", "–")
				continue
			}
			row = append(row, fmt.Sprintf("%.0f", g.NsPerOp), fmt.Sprintf("%d", g.AllocsPerOp))
		}
		ks, ok1 := sr.goBenchOf("kubeschema", c)
		st, ok2 := sr.goBenchOf("kubernetes", c)
		if ok1 && ok2 {
			row = append(row, ratioText(ks.NsPerOp, st.NsPerOp))
		} else {
			row = append(row, "–")
		}
		rows = append(rows, row)
	}
	b.table([]string{"query", "kubeschema ns/op", "allocs/op", "kubernetes ns/op", "allocs/op", "whoami ns/op", "allocs/op", "kubeschema / kubernetes"}, rows)
}

func writeMethod(b *md, res *results) {
	b.p("## How it is measured")
	for _, key := range sortedKeys(res.Targets) {
		b.line("- **%s**: %s", key, res.Targets[key])
	}
	b.line("")
	b.p("Each target is its own `bin/coredns` process with a generated Corefile: the plugin under test alone in a server block on a loopback port (A and B with the same options: `kubeconfig`, `pods verified`, zones `cluster.local in-addr.arpa ip6.arpa`), and `prometheus` and `pprof` in a second block on another port, so no other plugin is in the query path. The processes are started one after the other, each waited for until it answers the objects loaded last.")
	b.p("**Pinning and interleaving.** %s. All targets run for the whole scale; in each of %d rounds every test runs on each target in turn (A B C A B C …), each run %s (saturation runs %s), and the tables report the median over the rounds with the spread. Before the rounds each test's targets are saturated once (the calibration, also the warm-up), and the fixed load is half the slowest target's saturated rate. The column *other processes on server CPU* is the time the server's CPU ran something else during the run (user, nice, system and steal time of its /proc/stat line, less the server's own): the noise of other work on the machine.", res.Pinning, res.Rounds, res.Duration, res.SatDuration)
	b.p("**CPU per query** is the server's own CPU time over a run (utime + stime of /proc/PID/stat, read before and after dnsperf) divided by the queries dnsperf got answers to. **Latency percentiles** come from dnsperf's per-query lines (`-v`; Debian's dnsperf 2.10 has no histogram option), as dnsperf measured them, load generator included.")
	b.p("**Over TCP** the whole answer of the largest headless service is asked by the tool's own client (`go run . tcpload`, pinned like dnsperf: 4 connections, one query outstanding on each, sends paced at the fixed load), because Debian's dnsperf 2.10 does not complete TCP answers much over 16 KiB (in a check, 15 KB answers completed and 27 KB ones never did). It reads every answer whole and checks its rcode and record count (a short answer would be counted apart); latencies run from the send to the answer's last byte.")
	b.p("**Query mix** (10,000 queries drawn with a fixed seed, dnsperf loops over them): %s. The search-path misses are what a pod with `ndots:5` sends first for an external name: `google.com.<ns>.svc.cluster.local`, `google.com.svc.cluster.local`, `google.com.cluster.local`. The clusterset mix: %s.", res.Mix, res.MCMix)
	b.p("**Fixture.** Created through the real kube-apiserver by a parallel client-go loader (16 requests in flight): services of two named TCP ports, each with an EndpointSlice of ready endpoints (headless ones with StatefulSet-style hostnames), pods with their IPs written to the status (nothing schedules them), ServiceImports (ClusterSetIP, and every fifth Headless with EndpointSlices from two member clusters). Scales are loaded one after the other, and the servers are started anew at each.")
	b.p("**Memory** is read from a fresh process per target after it has synced and a forced garbage collection (the pprof heap profile with `gc=1`): VmRSS and VmHWM from /proc/PID/status, `go_memstats_heap_inuse_bytes` from the metrics endpoint.")
	b.p("**Programming latency.** %d changes made one after the other through the API, in turn a new ClusterIP service, an endpoint added to a headless service, and that endpoint made unready; for each, both servers are polled over UDP every millisecond until the answer shows the change (the new address, or its absence). The time runs from just before the API request to the first answer that shows it, so it includes the API server's write and watch delivery, the same for both plugins.", res.Changes)
	b.p("**In-process benchmarks** (`bench/inprocess`): one process starts CoreDNS from a Corefile with one server block per plugin (same options) against the same API server and data, takes each block's plugin handler at start-up (a small directive, `benchgrab`, reads it from the server block's config), waits until both plugins give the expected answer to every case, and times `ServeDNS` directly with a ResponseWriter that discards the reply: the plugin's own work, without network or packing.")
}

func writeReproduce(b *md, res *results) {
	b.p("## Reproduce")
	b.line("- everything: `make bench` (default scale) or `make bench SCALE=small`; the tool: `%s`", res.Command)
	names := map[string]string{testMixed: "cluster mix, fixed load", testTCP: "headless over TCP", testMC: "clusterset mix", testSaturated: "saturation"}
	for _, t := range []string{testMixed, testTCP, testMC, testSaturated} {
		if c, ok := res.Commands[t]; ok {
			b.line("- %s: `%s` against each target's port, its CPU from /proc/PID/stat before and after", names[t], c)
		}
	}
	if res.GoBenchCommand != "" {
		b.line("- in-process: `%s`", res.GoBenchCommand)
	}
	b.line("- the work directory with the Corefiles, query files and server logs is kept with `-keep`")
	b.line("")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
