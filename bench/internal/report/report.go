// Package report writes the bench's page (docs/benchmarks.md), the chart
// it embeds (benchmarks.svg) and the raw figures (benchmarks.json) from a
// run's results, and evaluates the targets the page's first table states.
package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schemadns/schemadns/bench/internal/churn"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// Write writes docs/benchmarks.md, the chart it embeds and the raw
// figures.
func Write(outDir string, res *results.Results) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	// make overload's summary, if the page has one, is carried over.
	old, _ := os.ReadFile(filepath.Join(outDir, "benchmarks.md"))
	files := map[string][]byte{
		"benchmarks.md":   []byte(toolreport.OverloadSummary.Carry(string(old), markdown(res))),
		"benchmarks.json": append(raw, '\n'),
	}
	if len(res.Shapes) > 0 { // the chart is the cluster shapes'; a Mesos-only run leaves it as it was
		files["benchmarks.svg"] = []byte(chart(res))
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(outDir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Rewrite writes the page and the chart again from the raw figures.
func Rewrite(outDir string) error {
	b, err := os.ReadFile(filepath.Join(outDir, "benchmarks.json"))
	if err != nil {
		return err
	}
	var res results.Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("benchmarks.json: %w", err)
	}
	return Write(outDir, &res)
}

func markdown(res *results.Results) string {
	var b toolreport.Doc
	b.Heading(1, "Benchmarks")
	b.Para("<!-- Written by the bench tool (bench/, `make bench`) with benchmarks.svg and benchmarks.json. " +
		"Do not edit by hand: run it again. -->")
	if res.Note != "" {
		b.Para("> **%s**", res.Note)
	}
	b.Para("Run of %s, %s, at scale %s. Command: `%s` (what `make bench` runs, from the repository's top directory).",
		res.Started.UTC().Format("2006-01-02 15:04 UTC"), res.Finished.Sub(res.Started).Round(time.Second), res.Scale, res.Command)
	if len(res.Shapes) > 0 {
		b.Para("**kubeschema** (ours) is compared with **stock**, CoreDNS's own `kubernetes` plugin compiled into " +
			"the same binary, with the same options, on each cluster shape below; the CPU tests also show the " +
			"**floor** (a server block with only `whoami`), and **kubeschema+multicluster** against " +
			"**stock+multicluster** on `clusterset.local`.")
	}
	if len(res.Mesos) > 0 {
		b.Para("**mesosschema** (ours) is measured on the Mesos shapes %s, polling a stand-in Mesos master, "+
			"against CoreDNS's stock `file` plugin serving the same records: see [Mesos](#mesos).", mesosShapeList(res))
	}
	writeMachine(&b, res)
	writeGoals(&b, res)
	if len(res.Shapes) > 0 {
		b.Para("![Memory by shape, start-up, CPU per query and TCP answer size of kubeschema and the stock " +
			"kubernetes plugin](benchmarks.svg)")
		writeShapes(&b, res)
		writeMemoryByShape(&b, res)
		writeChurn(&b, res)
		writeWindows(&b, res)
		for _, sr := range res.Shapes {
			if sr.Perf != nil {
				writePerf(&b, res, sr)
			}
		}
		writeThresholds(&b, res)
	}
	writeMesos(&b, res)
	if len(res.Shapes) > 0 {
		writeMethod(&b, res)
	}
	writeReproduce(&b, res)
	if len(res.Errors) > 0 {
		b.Heading(2, "Errors")
		b.List(res.Errors)
	}
	return b.String()
}

func writeMachine(b *toolreport.Doc, res *results.Results) {
	b.Heading(2, "Machine")
	t := res.Machine.Table()
	t.Row("dnsperf", res.Machine.Dnsperf+" (Debian)")
	t.Row("pinning", res.Pinning)
	b.Table(t)
}

func writeGoals(b *toolreport.Doc, res *results.Results) {
	b.Heading(2, "Targets")
	t := toolreport.NewTable("target", "shape", "goal", "measured", "").TextColumns(2)
	for _, g := range goals(res) {
		t.Row(g.What, g.Shape, g.Goal, g.Measured, toolreport.Bold(g.Met))
	}
	b.Table(t)
	var short []string
	for _, sr := range res.Shapes {
		if c := sr.Churn; c != nil && c.Rate < float64(c.Offered) {
			short = append(short, fmt.Sprintf("%s %.0f", sr.Label(), c.Rate))
		}
	}
	if len(short) > 0 {
		b.Para("The churn did not reach the %d updates/s offered (%s updates/s): its figures are at the rate "+
			"the API server sustained on this machine beside the two DNS servers.", res.Churn.Rate, strings.Join(short, ", "))
	}
}

func writeShapes(b *toolreport.Doc, res *results.Results) {
	b.Heading(2, "Shapes")
	t := toolreport.NewTable("shape", "stands for", "objects", "load, s").TextColumns(3)
	threshold := false
	for i, sr := range res.Shapes {
		sh := sr.Shape
		if sr.Run != nil && i > 0 && res.Shapes[i-1].Run != nil && res.Shapes[i-1].Shape.Name == sh.Name {
			t.Row(sr.Label(), sh.Title+", pods "+sr.Run.Pods, "the same objects in the same API server", toolreport.Dash)
			continue
		}
		title, load := sh.Title, fmt.Sprintf("%.0f", sr.LoadSeconds)
		if sr.Run != nil {
			threshold, title = true, sh.Title+", pods "+sr.Run.Pods
			load += fmt.Sprintf(" (%d writers)", sr.Run.Writers)
		}
		t.Row(sr.Label(), title, sh.Describe(), load)
	}
	b.Table(t)
	b.Para("Each shape has its own etcd and kube-apiserver, loaded before any DNS server starts. On S1–S4 every " +
		"service has two named TCP ports and its endpoints in one EndpointSlice; headless endpoints carry " +
		"StatefulSet-style hostnames.")
	if threshold {
		b.Para("S5 is internal/clustershape's threshold shape, loaded once by its loader (`clustershape.Load`) and " +
			"measured twice on the same API server, both plugins with `pods disabled` (no pod watch), then both with " +
			"`pods verified`: services of one or two named TCP ports, their EndpointSlices as the EndpointSlice " +
			"controller cuts them (at most 100 endpoints each, one set per family for dual-stack services), " +
			"headless endpoints with StatefulSet-style hostnames, pods with their addresses written to the status " +
			"and no node (nothing schedules them). See [S5](#s5-kubernetes-scalability-thresholds).")
	}
}

// startsText is "0.41 (0.39–0.52)": the median and range of start times.
func startsText(xs []float64) string {
	if len(xs) == 0 {
		return toolreport.Dash
	}
	if len(xs) == 1 {
		return fmt.Sprintf("%.2f", xs[0])
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", perf.Median(xs), slices.Min(xs), slices.Max(xs))
}

// startsOf is how many times kubeschema and stock were started per shape.
func startsOf(res *results.Results) string {
	if len(res.Shapes) == 0 {
		return toolreport.Dash
	}
	return fmt.Sprint(len(res.Shapes[0].FirstAnswer[server.KeyOurs]))
}

func writeMemoryByShape(b *toolreport.Doc, res *results.Results) {
	b.Heading(2, "Memory and start-up by shape")
	t := toolreport.NewTable("shape", "Go heap after GC MiB, kubeschema", "stock", "×",
		"RSS after sync MiB, kubeschema", "stock", "×", "peak RSS during sync MiB, kubeschema", "stock",
		"start to first complete answer s, median (min–max), kubeschema", "stock", "×",
		"started together: kubeschema", "stock", "×")
	for _, sr := range res.Shapes {
		a, s := sr.Memory[server.KeyOurs], sr.Memory[server.KeyStock]
		fa, fs := startsText(sr.FirstAnswer[server.KeyOurs]), startsText(sr.FirstAnswer[server.KeyStock])
		t.Row(sr.Label(),
			toolreport.Bold(toolreport.MiB(a.HeapInuse)), toolreport.MiB(s.HeapInuse),
			toolreport.Ratio(float64(a.HeapInuse), float64(s.HeapInuse)),
			toolreport.Bold(toolreport.MiB(a.RSS)), toolreport.MiB(s.RSS), toolreport.Ratio(float64(a.RSS), float64(s.RSS)),
			toolreport.MiB(a.PeakRSS), toolreport.MiB(s.PeakRSS),
			toolreport.Bold(fa), fs, toolreport.Ratio(sr.FirstAnswerMedian(server.KeyOurs), sr.FirstAnswerMedian(server.KeyStock)),
			toolreport.Bold(startsText(sr.Together[server.KeyOurs])), startsText(sr.Together[server.KeyStock]),
			toolreport.Ratio(perf.Median(sr.Together[server.KeyOurs]), perf.Median(sr.Together[server.KeyStock])))
	}
	b.Table(t)
	b.Para("Once the shape is loaded, kubeschema and stock are started in turn, one process at a time, %s times "+
		"each; the last start of each stays up for the memory figures (two seconds after its first complete "+
		"answer: a forced GC, then the Go heap in use and VmRSS) and the churn. *Start to first complete answer* "+
		"runs from the process's start to the moment every probe answers with all its records, polled every "+
		"10 ms: the last ClusterIP and the last headless service created (with all its endpoints), on S3 also "+
		"the last pod and the largest headless service over TCP. *Started together*: kubeschema and stock "+
		"started at the same moment against the shape's one API server, unpinned, as many times, each timed the "+
		"same way: they list at once, as they would after a control-plane restart or side by side during an "+
		"upgrade.", startsOf(res))
}

func writeChurn(b *toolreport.Doc, res *results.Results) {
	t := toolreport.NewTable("shape", "updates/s offered → achieved", "updates written", "peak RSS MiB, kubeschema",
		"stock", "×", "RSS after churn MiB, kubeschema", "stock", "answers checked, kubeschema / stock",
		"wrong answers", "names stale at the end", "queries unanswered", "server CPU µs per update")
	var examples []string
	for _, sr := range res.Shapes {
		c := sr.Churn
		if c == nil {
			continue
		}
		a, s := c.Check[server.KeyOurs], c.Check[server.KeyStock]
		t.Row(sr.Label(),
			fmt.Sprintf("%d → **%.0f**", c.Offered, c.Rate), fmt.Sprintf("%d (%d failed)", c.Updates, c.Failed),
			toolreport.Bold(toolreport.MiB(c.PeakRSS[server.KeyOurs])), toolreport.MiB(c.PeakRSS[server.KeyStock]),
			toolreport.Ratio(float64(c.PeakRSS[server.KeyOurs]), float64(c.PeakRSS[server.KeyStock])),
			toolreport.MiB(c.After[server.KeyOurs].RSS), toolreport.MiB(c.After[server.KeyStock].RSS),
			fmt.Sprintf("%d / %d", a.Answers, s.Answers), fmt.Sprintf("**%d** / %d", a.Wrong, s.Wrong),
			fmt.Sprintf("%d / %d", a.StaleAtEnd, s.StaleAtEnd), fmt.Sprintf("%d / %d", a.Errors, s.Errors),
			fmt.Sprintf("%s / %s", c.PerUpdate(server.KeyOurs), c.PerUpdate(server.KeyStock)))
		for _, k := range []string{server.KeyOurs, server.KeyStock} {
			for _, ex := range c.Check[k].Examples {
				examples = append(examples, fmt.Sprintf("%s, %s: %s", sr.Label(), k, ex))
			}
		}
	}
	if t.Len() == 0 {
		return
	}
	ch := res.Churn
	b.Heading(2, "Under EndpointSlice churn")
	b.Table(t)
	if len(examples) > 0 {
		b.Para("Wrong answers (the first of each):")
		b.List(examples)
	}
	b.Para("For %s, %d client-go writers (no client-side rate limit) rewrite the EndpointSlices of the shape's "+
		"services, picked at random, at %d updates/s offered (an update no writer is free for is dropped, so "+
		"the achieved rate is what the API server sustained); each update replaces one endpoint's address by a "+
		"new one and writes the slice whole. Both servers run through the same churn; for it they are no longer "+
		"pinned (every CPU, GOMAXPROCS still 1), so neither waits for the other's work. Meanwhile a checker "+
		"asks each server, at %d queries/s over UDP (over TCP again when truncated), for the headless services' "+
		"names in turn and compares each answer's address set with every set written for that name: an answer "+
		"that matches none is wrong. The set is recorded before its update is sent. After the writing, each "+
		"name is asked until it shows its last accepted set (for up to %s): *names stale at the end* never did. "+
		"*Peak RSS* is the peak from the start of the churn to the end of that settling; *RSS after churn* is "+
		"read after a forced GC. *Server CPU per update* is the server's utime+stime over the same span (the "+
		"checker's queries included) divided by the updates written.",
		ch.Duration, ch.Writers, ch.Rate, ch.CheckRate, churn.SettleTimeout)
}

// writeWindows writes the measuring windows that follow the checked churn:
// CPU per update with no queries, for address changes and for updates DNS
// does not read.
func writeWindows(b *toolreport.Doc, res *results.Results) {
	t := toolreport.NewTable("shape", "address changes written", "server CPU µs per update, kubeschema", "stock",
		"×", "names stale after the window, kubeschema / stock", "annotation-only updates written",
		"skipped by kubeschema", "server CPU µs per update, kubeschema", "stock", "×")
	for _, sr := range res.Shapes {
		c := sr.Churn
		if c == nil || c.Net == nil || c.Quiet == nil {
			continue
		}
		n, q := c.Net, c.Quiet
		t.Row(sr.Label(),
			fmt.Sprintf("%d in %.1fs (%d failed)", n.Updates, n.Seconds, n.Failed),
			toolreport.Bold(n.PerUpdate(server.KeyOurs)), n.PerUpdate(server.KeyStock),
			toolreport.Ratio(n.CPU[server.KeyOurs], n.CPU[server.KeyStock]),
			fmt.Sprintf("%d / %d", n.Stale[server.KeyOurs], n.Stale[server.KeyStock]),
			fmt.Sprintf("%d in %.1fs (%d failed)", q.Updates, q.Seconds, q.Failed),
			q.SkippedText(), toolreport.Bold(q.PerUpdate(server.KeyOurs)), q.PerUpdate(server.KeyStock),
			toolreport.Ratio(q.CPU[server.KeyOurs], q.CPU[server.KeyStock]))
	}
	if t.Len() == 0 {
		return
	}
	b.Heading(3, "Server CPU per update, net of queries")
	b.Table(t)
	b.Para("After the checked churn, two windows of a tenth of its length (at least 2 s) write at the same "+
		"offered rate with no checker running: the first the same address changes, the second only a new "+
		"annotation on each slice, which changes nothing DNS reads. *Server CPU per update* is each server's "+
		"utime+stime from the window's first write to a second after its last, divided by the updates written: "+
		"no query is in it. After the address changes every checked name is then asked until it shows its last "+
		"state (*names stale after the window*: those that did not within %s), which checks that the second was "+
		"enough. *Skipped by kubeschema* is the growth of "+
		"`coredns_watchcache_updates_skipped_total{resource=\"endpointslices\"}` over the window: updates that "+
		"sent no event, so no rebuild, no snapshot and no serial change. Stock skips such updates too (its "+
		"`endpointsEquivalent`), with no counter to show it.", churn.SettleTimeout)
}

// writePerf writes the tests of the default fixture.
func writePerf(b *toolreport.Doc, res *results.Results, sr *results.ShapeResult) {
	p := sr.Perf
	b.Heading(2, "%s %s: CPU per query, TCP, programming latency", sr.Shape.Name, sr.Shape.Title)
	b.Para("%s.", sr.Shape.Describe())
	perfTable(b, p, perf.TestMixed, fmt.Sprintf("Cluster mix over UDP at %d queries/s", p.Rates[perf.TestMixed]),
		versus{"floor", server.KeyFloor}, versus{"stock", server.KeyStock})
	big := sr.Shape.BigHeadless[len(sr.Shape.BigHeadless)-1]
	perfTable(b, p, perf.TestTCP, fmt.Sprintf("headless-%d A over TCP (whole answer) at %d queries/s", big, p.Rates[perf.TestTCP]),
		versus{"floor", ""}, versus{"stock", server.KeyStock})
	if _, ok := p.Runs[perf.TestMC]; ok {
		perfTable(b, p, perf.TestMC, fmt.Sprintf("Clusterset mix over UDP at %d queries/s", p.Rates[perf.TestMC]),
			versus{"floor", server.KeyFloor}, versus{"stock", server.KeyStockMC})
	}
	writeSaturation(b, p)
	writeMemory(b, sr)
	writeLatency(b, res, p)
	writeGoBench(b, p)
	if len(p.CrossCheck) > 0 {
		b.Heading(4, "Same answers?")
		writeCrossCheck(b, p, "")
		b.End()
	}
}

// writeCrossCheck writes a list item for each pair of targets whose answers
// to the mix were compared, each item beginning with lead.
func writeCrossCheck(b *toolreport.Doc, p *perf.Figures, lead string) {
	for _, c := range p.CrossCheck {
		b.Line("- %s%s: %d of %d distinct queries of the mix answered differently (rcode or answer records, "+
			"TTL and order aside).", lead, c.Pair, c.Differing, c.Compared)
		for _, ex := range c.Examples {
			b.Line("  - `%s`", ex)
		}
	}
}

// versus is a target a table's figures are divided by, in a column
// "× label" (an empty key: a column of dashes).
type versus struct{ label, key string }

// perfTable is a fixed-load test under a heading of its own: medians over
// the rounds, with the ratios to the targets of vs (and, over TCP, the
// answer's size to stock's).
func perfTable(b *toolreport.Doc, p *perf.Figures, test, title string, vs ...versus) {
	runs := p.Runs[test]
	if len(runs) == 0 {
		return
	}
	b.Heading(3, "%s", title)
	head := []string{"target", "server CPU µs/query, median (min–max)"}
	for _, v := range vs {
		head = append(head, "× "+v.label)
	}
	head = append(head, "p50 ms", "p90 ms", "p99 ms", "answered", "rcodes", "other processes on server CPU")
	if test == perf.TestTCP {
		head = append(head, "answer bytes", "× stock")
	}
	t := toolreport.NewTable(head...)
	for _, key := range p.Order[test] {
		s := p.SummaryOf(test, key)
		row := []string{key, fmt.Sprintf("**%.1f** (%.1f–%.1f)", s.CPU, s.CPUMin, s.CPUMax)}
		for _, v := range vs {
			row = append(row, toolreport.Ratio(s.CPU, p.SummaryOf(test, v.key).CPU))
		}
		row = append(row,
			fmt.Sprintf("%.3f", s.P50), fmt.Sprintf("%.3f", s.P90), fmt.Sprintf("%.3f", s.P99),
			fmt.Sprintf("%.2f%%", 100*float64(s.Completed)/float64(max(s.Sent, 1))),
			s.RcodeMix(), toolreport.Percent(s.Other),
		)
		if test == perf.TestTCP {
			row = append(row, fmt.Sprintf("%.0f", p.AnswerBytes(key)), toolreport.Ratio(p.AnswerBytes(key), p.AnswerBytes(server.KeyStock)))
		}
		t.Row(row...)
	}
	b.Table(t)
}

func writeSaturation(b *toolreport.Doc, p *perf.Figures) {
	runs := p.Runs[perf.TestSaturated]
	if len(runs) == 0 {
		return
	}
	b.Heading(3, "Saturation: cluster mix over UDP, as fast as dnsperf sends")
	t := toolreport.NewTable("target", "queries/s (median)", "server CPU µs/query", "answered")
	for _, key := range p.Order[perf.TestSaturated] {
		s := p.SummaryOf(perf.TestSaturated, key)
		t.Row(key, fmt.Sprintf("%.0f", s.QPS), fmt.Sprintf("%.1f", s.CPU),
			fmt.Sprintf("%.2f%%", 100*float64(s.Completed)/float64(max(s.Sent, 1))))
	}
	b.Table(t)
	b.Para("dnsperf has one CPU, as the server does; when the queries per second of the floor and the plugins " +
		"are close, the load generator is the limit, and CPU per query is the figure that tells the plugins apart.")
}

func writeMemory(b *toolreport.Doc, sr *results.ShapeResult) {
	if len(sr.Memory) == 0 {
		return
	}
	b.Heading(3, "Memory after sync, every target")
	t := toolreport.NewTable("target", "Go heap after GC MiB", "RSS MiB", "peak RSS during sync MiB",
		"start to first complete answer s, median (min–max)")
	for _, key := range []string{server.KeyOurs, server.KeyStock, server.KeyOursMC, server.KeyStockMC} {
		m, ok := sr.Memory[key]
		if !ok {
			continue
		}
		t.Row(key, toolreport.Bold(toolreport.MiB(m.HeapInuse)), toolreport.MiB(m.RSS), toolreport.MiB(m.PeakRSS),
			startsText(sr.FirstAnswer[key]))
	}
	b.Table(t)
}

func writeLatency(b *toolreport.Doc, res *results.Results, p *perf.Figures) {
	if len(p.Latency) == 0 {
		return
	}
	b.Heading(3, "DNS programming latency (%d changes through the API)", res.Changes)
	t := toolreport.NewTable("plugin", "p50 ms", "p90 ms", "p99 ms", "max ms", "timeouts (10 s)", "median by change, ms")
	for _, key := range slices.Sorted(maps.Keys(p.Latency)) {
		l := p.Latency[key]
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(l.ByKind)) {
			kinds = append(kinds, fmt.Sprintf("%s %.1f", k, l.ByKind[k]))
		}
		t.Row(key, fmt.Sprintf("%.1f", l.P50), fmt.Sprintf("%.1f", l.P90),
			fmt.Sprintf("**%.1f**", l.P99), fmt.Sprintf("%.1f", l.Max), fmt.Sprint(l.Timeouts), strings.Join(kinds, "; "))
	}
	b.Table(t)
	if lp := p.LatencyPaired; lp.Changes > 0 {
		b.Para("Change by change (both servers see the same watch event, so this cancels the API server's share): "+
			"%s median %+.2f ms; kubeschema showed the change no later than stock in %.0f%% of %d changes. "+
			"Polling is every millisecond, so differences under about 1 ms are resolution.",
			lp.Pair, lp.MedianMs, 100*lp.FirstWins, lp.Changes)
	}
}

func writeGoBench(b *toolreport.Doc, p *perf.Figures) {
	if len(p.GoBench) == 0 {
		return
	}
	b.Heading(3, "In-process ServeDNS (go test -bench, one CPU)")
	var cases []string
	plugins := []string{"kubeschema", "kubernetes", "whoami"}
	for _, g := range p.GoBench {
		if !slices.Contains(cases, g.Case) {
			cases = append(cases, g.Case)
		}
	}
	t := toolreport.NewTable("query", "kubeschema ns/op", "allocs/op", "stock ns/op", "allocs/op",
		"floor (whoami) ns/op", "allocs/op", "kubeschema / stock")
	for _, c := range cases {
		row := []string{c}
		for _, pl := range plugins {
			g, ok := p.GoBenchOf(pl, c)
			if !ok {
				row = append(row, toolreport.Dash, toolreport.Dash)
				continue
			}
			row = append(row, fmt.Sprintf("%.0f", g.NsPerOp), fmt.Sprintf("%d", g.AllocsPerOp))
		}
		ks, ok1 := p.GoBenchOf("kubeschema", c)
		st, ok2 := p.GoBenchOf("kubernetes", c)
		if ok1 && ok2 {
			row = append(row, toolreport.Ratio(ks.NsPerOp, st.NsPerOp))
		} else {
			row = append(row, toolreport.Dash)
		}
		t.Row(row...)
	}
	b.Table(t)
}

// writeTargets lists what each of keys is, as the run described it.
func writeTargets(b *toolreport.Doc, res *results.Results, keys ...string) {
	for _, key := range keys {
		if label, ok := res.Targets[key]; ok {
			b.Line("- **%s**: %s", key, label)
		}
	}
	b.End()
}

func writeMethod(b *toolreport.Doc, res *results.Results) {
	b.Heading(2, "How it is measured")
	writeTargets(b, res, server.KeyOurs, server.KeyStock, server.KeyFloor, server.KeyOursMC, server.KeyStockMC)
	b.Para("Each target is its own `bin/coredns` process with a generated Corefile: the plugin under test alone " +
		"in a server block on a loopback port (kubeschema and stock with the same options: `kubeconfig`, " +
		"`pods verified`, zones `cluster.local in-addr.arpa ip6.arpa`), and `pprof` in a second block on " +
		"another port, so no other plugin is in the query path. On every shape the processes are started one " +
		"after the other, each waited for until it answers the objects loaded last.")
	b.Para("**Memory** is read from /proc/PID/status (VmRSS; VmHWM for peaks) and from the Go runtime: the " +
		"pprof heap profile with `gc=1&debug=1` forces a garbage collection and ends with the runtime's " +
		"MemStats read right after it; *Go heap after GC* is its `HeapInuse`.")
	b.Para("**Pinning and interleaving** (the default fixture's CPU tests). %s. In each of %d rounds every test "+
		"runs on each target in turn, each run %s (saturation runs %s), and the tables report the median over "+
		"the rounds with the spread. Before the rounds each test's targets are saturated once (the "+
		"calibration, also the warm-up), and the fixed load is half the slowest target's saturated rate. The "+
		"column *other processes on server CPU* is the time the server's CPU ran something else during the run "+
		"(user, nice, system and steal time of its /proc/stat line, less the server's own): the noise of other "+
		"work on the machine.", res.Pinning, res.Rounds, res.Duration, res.SatDuration)
	b.Para("**CPU per query** is the server's own CPU time over a run (utime + stime of /proc/PID/stat, read " +
		"before and after dnsperf) divided by the queries dnsperf got answers to. **Latency percentiles** come " +
		"from dnsperf's per-query lines (`-v`; Debian's dnsperf 2.10 has no histogram option), as dnsperf " +
		"measured them, load generator included.")
	b.Para("**Over TCP** the whole answer of the largest headless service is asked by the tool's own client " +
		"(`go run . tcpload`, pinned like dnsperf: 4 connections, one query outstanding on each, sends paced at " +
		"the fixed load), because Debian's dnsperf 2.10 does not complete TCP answers much over 16 KiB (in a " +
		"check, 15 KB answers completed and 27 KB ones never did). It reads every answer whole and checks its " +
		"rcode and record count (a short answer would be counted apart); latencies run from the send to the " +
		"answer's last byte, and *answer bytes* is the DNS message's length.")
	b.Para("**Query mix** (10,000 queries drawn with a fixed seed, dnsperf loops over them): %s. The search-path "+
		"misses are what a pod with `ndots:5` sends first for an external name: "+
		"`google.com.<ns>.svc.cluster.local`, `google.com.svc.cluster.local`, `google.com.cluster.local`. "+
		"The clusterset mix: %s.", res.Mix, res.MCMix)
	b.Para("**Fixture.** Created through the real kube-apiserver by a parallel client-go loader (16 requests in " +
		"flight): services of two named TCP ports, each with an EndpointSlice of ready endpoints (headless ones " +
		"with StatefulSet-style hostnames), pods with their IPs written to the status (nothing schedules them), " +
		"ServiceImports (ClusterSetIP, and every fifth Headless with EndpointSlices from two member clusters).")
	b.Para("**Programming latency.** %d changes made one after the other through the API, in turn a new "+
		"ClusterIP service, an endpoint added to a headless service, and that endpoint made unready; for each, "+
		"both servers are polled over UDP every millisecond until the answer shows the change (the new address, "+
		"or its absence). The time runs from just before the API request to the first answer that shows it, so "+
		"it includes the API server's write and watch delivery, the same for both plugins.", res.Changes)
	b.Para("**In-process benchmarks** (`bench/inprocess`): one process starts CoreDNS from a Corefile with one " +
		"server block per plugin (same options) against the same API server and data (after the churn), takes " +
		"each block's plugin handler at start-up (a small directive, `benchgrab`, reads it from the server " +
		"block's config), waits until both plugins give the expected answer to every case, and times " +
		"`ServeDNS` directly with a ResponseWriter that discards the reply: the plugin's own work, without " +
		"network or packing.")
}

func writeReproduce(b *toolreport.Doc, res *results.Results) {
	b.Heading(2, "Reproduce")
	b.Line("- everything: `make bench` (default scale), `make bench SCALE=small`, one shape: `make bench SHAPES=S2` "+
		"(the Mesos shapes: `make bench SHAPES=M1`, `SHAPES=M1,M2`); the tool: `%s`", res.Command)
	names := map[string]string{perf.TestMixed: "cluster mix, fixed load", perf.TestTCP: "headless over TCP",
		perf.TestMC: "clusterset mix", perf.TestSaturated: "saturation"}
	const against = "against each target's port, its CPU from /proc/PID/stat before and after"
	for _, t := range []string{perf.TestMixed, perf.TestTCP, perf.TestMC, perf.TestSaturated} {
		if c, ok := res.Commands[t]; ok {
			b.Line("- %s: `%s` %s", names[t], c, against)
		}
	}
	if res.GoBenchCommand != "" {
		b.Line("- in-process: `%s`", res.GoBenchCommand)
	}
	for _, mr := range res.Mesos {
		if mr.MixCommand != "" {
			b.Line("- %s Mesos mix, fixed load: `%s` %s", mr.Shape.Name, mr.MixCommand, against)
		}
	}
	b.Line("- the work directory with the Corefiles, query files and server logs is kept with `-keep`")
	b.End()
}
