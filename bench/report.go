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
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"benchmarks.md":   []byte(markdown(res)),
		"benchmarks.json": append(raw, '\n'),
	}
	if len(res.Shapes) > 0 { // the chart is the cluster shapes'; a Mesos-only run leaves it as it was
		files["benchmarks.svg"] = []byte(chart(res))
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(cfg.OutDir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// rewrite writes the page and the chart again from the raw figures.
func rewrite(cfg *config) error {
	b, err := os.ReadFile(filepath.Join(cfg.OutDir, "benchmarks.json"))
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

// table writes a Markdown table: the first column aligned left, the
// others (figures) right.
func (b *md) table(head []string, rows [][]string) { b.tableLeft(1, head, rows) }

// tableLeft writes a Markdown table whose first left columns are text.
func (b *md) tableLeft(left int, head []string, rows [][]string) {
	b.line("| %s |", strings.Join(head, " | "))
	seps := make([]string, len(head))
	for i := range seps {
		seps[i] = "---"
		if i >= left {
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
	b.p("Run of %s, %s, at scale %s. Command: `%s` (what `make bench` runs, from the repository's top directory).",
		res.Started.UTC().Format("2006-01-02 15:04 UTC"), res.Finished.Sub(res.Started).Round(time.Second), res.Scale, res.Command)
	if len(res.Shapes) > 0 {
		b.p("**kubeschema** (ours) is compared with **stock**, CoreDNS's own `kubernetes` plugin compiled into the same binary, with the same options, on each cluster shape below; the CPU tests also show the **floor** (a server block with only `whoami`), and **kubeschema+multicluster** against **stock+multicluster** on `clusterset.local`.")
	}
	if len(res.Mesos) > 0 {
		b.p("**mesosschema** (ours) is measured on the Mesos shapes %s, polling a stand-in Mesos master, against CoreDNS's stock `file` plugin serving the same records: see [Mesos](#mesos).", mesosShapeList(res))
	}
	writeMachine(&b, res)
	writeGoals(&b, res)
	if len(res.Shapes) > 0 {
		b.p("![Memory by shape, start-up, CPU per query and TCP answer size of kubeschema and the stock kubernetes plugin](benchmarks.svg)")
		writeShapes(&b, res)
		writeMemoryByShape(&b, res)
		writeChurn(&b, res)
		writeWindows(&b, res)
		for _, sr := range res.Shapes {
			if sr.Perf != nil {
				writePerf(&b, res, sr)
			}
		}
	}
	writeMesos(&b, res)
	if len(res.Shapes) > 0 {
		writeMethod(&b, res)
	}
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
		{"bin/coredns -version", m.Binary},
		{"load average (1, 5, 15 min) at start / end", m.LoadStart + " / " + m.LoadEnd},
		{"pinning", res.Pinning},
	})
}

func writeGoals(b *md, res *results) {
	b.p("## Targets")
	var rows [][]string
	for _, g := range goals(res) {
		rows = append(rows, []string{g.What, g.Shape, g.Goal, g.Measured, "**" + g.Met + "**"})
	}
	b.tableLeft(2, []string{"target", "shape", "goal", "measured", ""}, rows)
	var short []string
	for _, sr := range res.Shapes {
		if c := sr.Churn; c != nil && c.Rate < float64(c.Offered) {
			short = append(short, fmt.Sprintf("%s %.0f", sr.Shape.Name, c.Rate))
		}
	}
	if len(short) > 0 {
		b.p("The churn did not reach the %d updates/s offered (%s updates/s): its figures are at the rate the API server sustained on this machine beside the two DNS servers.", res.Churn.Rate, strings.Join(short, ", "))
	}
}

func writeShapes(b *md, res *results) {
	b.p("## Shapes")
	var rows [][]string
	for _, sr := range res.Shapes {
		sh := sr.Shape
		rows = append(rows, []string{sh.Name, sh.Title, sh.describe(), fmt.Sprintf("%.0f", sr.LoadSeconds)})
	}
	b.tableLeft(3, []string{"shape", "stands for", "objects", "load, s"}, rows)
	b.p("Each shape has its own etcd and kube-apiserver, loaded before any DNS server starts. Every service has two named TCP ports and its endpoints in one EndpointSlice; headless endpoints carry StatefulSet-style hostnames.")
}

// startsText is "0.41 (0.39–0.52)": the median and range of start times.
func startsText(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	if len(xs) == 1 {
		return fmt.Sprintf("%.2f", xs[0])
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", median(xs), slices.Min(xs), slices.Max(xs))
}

// startsOf is how many times kubeschema and stock were started per shape.
func startsOf(res *results) string {
	if len(res.Shapes) == 0 {
		return "–"
	}
	return fmt.Sprint(len(res.Shapes[0].FirstAnswer[keyOurs]))
}

// mibText is bytes in MiB.
func mibText(n int64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(n)/mib)
}

func writeMemoryByShape(b *md, res *results) {
	b.p("## Memory and start-up by shape")
	var rows [][]string
	for _, sr := range res.Shapes {
		a, s := sr.Memory[keyOurs], sr.Memory[keyStock]
		fa, fs := startsText(sr.FirstAnswer[keyOurs]), startsText(sr.FirstAnswer[keyStock])
		rows = append(rows, []string{sr.Shape.Name,
			"**" + mibText(a.HeapInuse) + "**", mibText(s.HeapInuse), ratioText(float64(a.HeapInuse), float64(s.HeapInuse)),
			"**" + mibText(a.RSS) + "**", mibText(s.RSS), ratioText(float64(a.RSS), float64(s.RSS)),
			mibText(a.PeakRSS), mibText(s.PeakRSS),
			"**" + fa + "**", fs, ratioText(sr.firstAnswer(keyOurs), sr.firstAnswer(keyStock)),
			"**" + startsText(sr.Together[keyOurs]) + "**", startsText(sr.Together[keyStock]), ratioText(median(sr.Together[keyOurs]), median(sr.Together[keyStock])),
		})
	}
	b.table([]string{"shape", "Go heap after GC MiB, kubeschema", "stock", "×", "RSS after sync MiB, kubeschema", "stock", "×",
		"peak RSS during sync MiB, kubeschema", "stock", "start to first complete answer s, median (min–max), kubeschema", "stock", "×",
		"started together: kubeschema", "stock", "×"}, rows)
	b.p("Once the shape is loaded, kubeschema and stock are started in turn, one process at a time, %s times each; the last start of each stays up for the memory figures (two seconds after its first complete answer: a forced GC, then the Go heap in use and VmRSS) and the churn. *Start to first complete answer* runs from the process's start to the moment every probe answers with all its records, polled every 10 ms: the last ClusterIP and the last headless service created (with all its endpoints), on S3 also the last pod and the largest headless service over TCP. *Started together*: kubeschema and stock started at the same moment against the shape's one API server, unpinned, as many times, each timed the same way: they list at once, as they would after a control-plane restart or side by side during an upgrade.", startsOf(res))
}

func writeChurn(b *md, res *results) {
	var rows [][]string
	var examples []string
	for _, sr := range res.Shapes {
		c := sr.Churn
		if c == nil {
			continue
		}
		a, s := c.Check[keyOurs], c.Check[keyStock]
		rows = append(rows, []string{sr.Shape.Name,
			fmt.Sprintf("%d → **%.0f**", c.Offered, c.Rate), fmt.Sprintf("%d (%d failed)", c.Updates, c.Failed),
			"**" + mibText(c.PeakRSS[keyOurs]) + "**", mibText(c.PeakRSS[keyStock]), ratioText(float64(c.PeakRSS[keyOurs]), float64(c.PeakRSS[keyStock])),
			mibText(c.After[keyOurs].RSS), mibText(c.After[keyStock].RSS),
			fmt.Sprintf("%d / %d", a.Answers, s.Answers), fmt.Sprintf("**%d** / %d", a.Wrong, s.Wrong),
			fmt.Sprintf("%d / %d", a.StaleAtEnd, s.StaleAtEnd), fmt.Sprintf("%d / %d", a.Errors, s.Errors),
			fmt.Sprintf("%s / %s", perUpdate(c, keyOurs), perUpdate(c, keyStock)),
		})
		for _, k := range []string{keyOurs, keyStock} {
			for _, ex := range c.Check[k].Examples {
				examples = append(examples, fmt.Sprintf("%s, %s: %s", sr.Shape.Name, k, ex))
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	ch := res.Churn
	b.p("## Under EndpointSlice churn")
	b.table([]string{"shape", "updates/s offered → achieved", "updates written", "peak RSS MiB, kubeschema", "stock", "×",
		"RSS after churn MiB, kubeschema", "stock", "answers checked, kubeschema / stock", "wrong answers", "names stale at the end", "queries unanswered",
		"server CPU µs per update"}, rows)
	if len(examples) > 0 {
		b.p("Wrong answers (the first of each):")
		for _, ex := range examples {
			b.line("- %s", ex)
		}
		b.line("")
	}
	b.p("For %s, %d client-go writers (no client-side rate limit) rewrite the EndpointSlices of the shape's services, picked at random, at %d updates/s offered (an update no writer is free for is dropped, so the achieved rate is what the API server sustained); each update replaces one endpoint's address by a new one and writes the slice whole. Both servers run through the same churn; for it they are no longer pinned (every CPU, GOMAXPROCS still 1), so neither waits for the other's work. Meanwhile a checker asks each server, at %d queries/s over UDP (over TCP again when truncated), for the headless services' names in turn and compares each answer's address set with every set written for that name: an answer that matches none is wrong. The set is recorded before its update is sent. After the writing, each name is asked until it shows its last accepted set (for up to %s): *names stale at the end* never did. *Peak RSS* is the peak from the start of the churn to the end of that settling; *RSS after churn* is read after a forced GC. *Server CPU per update* is the server's utime+stime over the same span (the checker's queries included) divided by the updates written.",
		ch.Duration, ch.Writers, ch.Rate, ch.CheckRate, settleTimeout)
}

// writeWindows writes the measuring windows that follow the checked churn:
// CPU per update with no queries, for address changes and for updates DNS
// does not read.
func writeWindows(b *md, res *results) {
	var rows [][]string
	for _, sr := range res.Shapes {
		c := sr.Churn
		if c == nil || c.Net == nil || c.Quiet == nil {
			continue
		}
		n, q := c.Net, c.Quiet
		rows = append(rows, []string{sr.Shape.Name,
			fmt.Sprintf("%d in %.1fs (%d failed)", n.Updates, n.Seconds, n.Failed),
			"**" + windowPerUpdate(n, keyOurs) + "**", windowPerUpdate(n, keyStock), ratioText(n.CPU[keyOurs], n.CPU[keyStock]),
			fmt.Sprintf("%d / %d", n.Stale[keyOurs], n.Stale[keyStock]),
			fmt.Sprintf("%d in %.1fs (%d failed)", q.Updates, q.Seconds, q.Failed),
			skippedText(q), "**" + windowPerUpdate(q, keyOurs) + "**", windowPerUpdate(q, keyStock), ratioText(q.CPU[keyOurs], q.CPU[keyStock]),
		})
	}
	if len(rows) == 0 {
		return
	}
	b.p("### Server CPU per update, net of queries")
	b.table([]string{"shape", "address changes written", "server CPU µs per update, kubeschema", "stock", "×",
		"names stale after the window, kubeschema / stock", "annotation-only updates written", "skipped by kubeschema", "server CPU µs per update, kubeschema", "stock", "×"}, rows)
	b.p("After the checked churn, two windows of a tenth of its length (at least 2 s) write at the same offered rate with no checker running: the first the same address changes, the second only a new annotation on each slice, which changes nothing DNS reads. *Server CPU per update* is each server's utime+stime from the window's first write to a second after its last, divided by the updates written: no query is in it. After the address changes every checked name is then asked until it shows its last state (*names stale after the window*: those that did not within %s), which checks that the second was enough. *Skipped by kubeschema* is the growth of `coredns_watchcache_updates_skipped_total{resource=\"endpointslices\"}` over the window: updates that sent no event, so no rebuild, no snapshot and no serial change. Stock skips such updates too (its `endpointsEquivalent`), with no counter to show it.", settleTimeout)
}

// windowPerUpdate is a server's CPU over a window per update written, µs.
func windowPerUpdate(w *windowResult, key string) string {
	if w.Updates == 0 || w.CPU[key] <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", w.CPU[key]/float64(w.Updates)*1e6)
}

// skippedText is how many of a window's updates ours skipped.
func skippedText(w *windowResult) string {
	n, ok := w.Skipped[keyOurs]
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%d of %d", n, w.Updates)
}

// perUpdate is a server's CPU time over the churn per update written, µs.
func perUpdate(c *churnResult, key string) string {
	if c.Updates == 0 || c.CPU[key] == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", c.CPU[key]/float64(c.Updates)*1e6)
}

// writePerf writes the tests of the default fixture.
func writePerf(b *md, res *results, sr *shapeResult) {
	p := sr.Perf
	b.p("## %s %s: CPU per query, TCP, programming latency", sr.Shape.Name, sr.Shape.Title)
	b.p("%s.", sr.Shape.describe())
	perfTable(b, p, testMixed, fmt.Sprintf("### Cluster mix over UDP at %d queries/s", p.Rates[testMixed]), versus{"floor", keyFloor}, versus{"stock", keyStock})
	big := sr.Shape.BigHeadless[len(sr.Shape.BigHeadless)-1]
	perfTable(b, p, testTCP, fmt.Sprintf("### headless-%d A over TCP (whole answer) at %d queries/s", big, p.Rates[testTCP]), versus{"floor", ""}, versus{"stock", keyStock})
	if _, ok := p.Runs[testMC]; ok {
		perfTable(b, p, testMC, fmt.Sprintf("### Clusterset mix over UDP at %d queries/s", p.Rates[testMC]), versus{"floor", keyFloor}, versus{"stock", keyStockMC})
	}
	writeSaturation(b, res, p)
	writeMemory(b, res, sr)
	writeLatency(b, res, p)
	writeGoBench(b, p)
	if len(p.CrossCheck) > 0 {
		b.p("#### Same answers?")
		for _, c := range p.CrossCheck {
			b.line("- %s: %d of %d distinct queries of the mix answered differently (rcode or answer records, TTL and order aside).", c.Pair, c.Differing, c.Compared)
			for _, ex := range c.Examples {
				b.line("  - `%s`", ex)
			}
		}
		b.line("")
	}
}

// versus is a target a table's figures are divided by, in a column
// "× label" (an empty key: a column of dashes).
type versus struct{ label, key string }

// perfTable is a fixed-load test: medians over the rounds, with the ratios
// to the targets of vs (and, over TCP, the answer's size to stock's).
func perfTable(b *md, p *perfFigures, test, title string, vs ...versus) {
	runs := p.Runs[test]
	if len(runs) == 0 {
		return
	}
	b.p("%s", title)
	head := []string{"target", "server CPU µs/query, median (min–max)"}
	for _, v := range vs {
		head = append(head, "× "+v.label)
	}
	head = append(head, "p50 ms", "p90 ms", "p99 ms", "answered", "rcodes", "other processes on server CPU")
	if test == testTCP {
		head = append(head, "answer bytes", "× stock")
	}
	var rows [][]string
	for _, key := range p.Order[test] {
		s := p.summaryOf(test, key)
		row := []string{key, fmt.Sprintf("**%.1f** (%.1f–%.1f)", s.CPU, s.CPUMin, s.CPUMax)}
		for _, v := range vs {
			row = append(row, ratioText(s.CPU, p.summaryOf(test, v.key).CPU))
		}
		row = append(row,
			fmt.Sprintf("%.3f", s.P50), fmt.Sprintf("%.3f", s.P90), fmt.Sprintf("%.3f", s.P99),
			fmt.Sprintf("%.2f%%", 100*float64(s.Completed)/float64(max(s.Sent, 1))),
			s.rcodeMix(), fmt.Sprintf("%.0f%%", 100*s.Other),
		)
		if test == testTCP {
			row = append(row, fmt.Sprintf("%.0f", p.answerBytes(key)), ratioText(p.answerBytes(key), p.answerBytes(keyStock)))
		}
		rows = append(rows, row)
	}
	b.table(head, rows)
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

func writeSaturation(b *md, res *results, p *perfFigures) {
	runs := p.Runs[testSaturated]
	if len(runs) == 0 {
		return
	}
	b.p("### Saturation: cluster mix over UDP, as fast as dnsperf sends")
	var rows [][]string
	for _, key := range p.Order[testSaturated] {
		s := p.summaryOf(testSaturated, key)
		rows = append(rows, []string{key, fmt.Sprintf("%.0f", s.QPS), fmt.Sprintf("%.1f", s.CPU),
			fmt.Sprintf("%.2f%%", 100*float64(s.Completed)/float64(max(s.Sent, 1)))})
	}
	b.table([]string{"target", "queries/s (median)", "server CPU µs/query", "answered"}, rows)
	b.p("dnsperf has one CPU, as the server does; when the queries per second of the floor and the plugins are close, the load generator is the limit, and CPU per query is the figure that tells the plugins apart.")
}

func writeMemory(b *md, res *results, sr *shapeResult) {
	if len(sr.Memory) == 0 {
		return
	}
	b.p("### Memory after sync, every target")
	var rows [][]string
	for _, key := range []string{keyOurs, keyStock, keyOursMC, keyStockMC} {
		m, ok := sr.Memory[key]
		if !ok {
			continue
		}
		rows = append(rows, []string{key, fmt.Sprintf("**%s**", mibText(m.HeapInuse)), mibText(m.RSS), mibText(m.PeakRSS), startsText(sr.FirstAnswer[key])})
	}
	b.table([]string{"target", "Go heap after GC MiB", "RSS MiB", "peak RSS during sync MiB", "start to first complete answer s, median (min–max)"}, rows)
}

func writeLatency(b *md, res *results, p *perfFigures) {
	if len(p.Latency) == 0 {
		return
	}
	b.p("### DNS programming latency (%d changes through the API)", res.Changes)
	var rows [][]string
	for _, key := range sortedKeys(p.Latency) {
		l := p.Latency[key]
		var kinds []string
		for _, k := range sortedKeys(l.ByKind) {
			kinds = append(kinds, fmt.Sprintf("%s %.1f", k, l.ByKind[k]))
		}
		rows = append(rows, []string{key, fmt.Sprintf("%.1f", l.P50), fmt.Sprintf("%.1f", l.P90),
			fmt.Sprintf("**%.1f**", l.P99), fmt.Sprintf("%.1f", l.Max), fmt.Sprint(l.Timeouts), strings.Join(kinds, "; ")})
	}
	b.table([]string{"plugin", "p50 ms", "p90 ms", "p99 ms", "max ms", "timeouts (10 s)", "median by change, ms"}, rows)
	if lp := p.LatencyPaired; lp.Changes > 0 {
		b.p("Change by change (both servers see the same watch event, so this cancels the API server's share): %s median %+.2f ms; kubeschema showed the change no later than stock in %.0f%% of %d changes. Polling is every millisecond, so differences under about 1 ms are resolution.",
			lp.Pair, lp.MedianMs, 100*lp.FirstWins, lp.Changes)
	}
}

func writeGoBench(b *md, p *perfFigures) {
	if len(p.GoBench) == 0 {
		return
	}
	b.p("### In-process ServeDNS (go test -bench, one CPU)")
	var cases []string
	plugins := []string{"kubeschema", "kubernetes", "whoami"}
	for _, g := range p.GoBench {
		if !slices.Contains(cases, g.Case) {
			cases = append(cases, g.Case)
		}
	}
	var rows [][]string
	for _, c := range cases {
		row := []string{c}
		for _, pl := range plugins {
			g, ok := p.goBenchOf(pl, c)
			if !ok {
				row = append(row, "–", "–")
				continue
			}
			row = append(row, fmt.Sprintf("%.0f", g.NsPerOp), fmt.Sprintf("%d", g.AllocsPerOp))
		}
		ks, ok1 := p.goBenchOf("kubeschema", c)
		st, ok2 := p.goBenchOf("kubernetes", c)
		if ok1 && ok2 {
			row = append(row, ratioText(ks.NsPerOp, st.NsPerOp))
		} else {
			row = append(row, "–")
		}
		rows = append(rows, row)
	}
	b.table([]string{"query", "kubeschema ns/op", "allocs/op", "stock ns/op", "allocs/op", "floor (whoami) ns/op", "allocs/op", "kubeschema / stock"}, rows)
}

func writeMethod(b *md, res *results) {
	b.p("## How it is measured")
	for _, key := range []string{keyOurs, keyStock, keyFloor, keyOursMC, keyStockMC} {
		if label, ok := res.Targets[key]; ok {
			b.line("- **%s**: %s", key, label)
		}
	}
	b.line("")
	b.p("Each target is its own `bin/coredns` process with a generated Corefile: the plugin under test alone in a server block on a loopback port (kubeschema and stock with the same options: `kubeconfig`, `pods verified`, zones `cluster.local in-addr.arpa ip6.arpa`), and `pprof` in a second block on another port, so no other plugin is in the query path. On every shape the processes are started one after the other, each waited for until it answers the objects loaded last.")
	b.p("**Memory** is read from /proc/PID/status (VmRSS; VmHWM for peaks) and from the Go runtime: the pprof heap profile with `gc=1&debug=1` forces a garbage collection and ends with the runtime's MemStats read right after it; *Go heap after GC* is its `HeapInuse`.")
	b.p("**Pinning and interleaving** (the default fixture's CPU tests). %s. In each of %d rounds every test runs on each target in turn, each run %s (saturation runs %s), and the tables report the median over the rounds with the spread. Before the rounds each test's targets are saturated once (the calibration, also the warm-up), and the fixed load is half the slowest target's saturated rate. The column *other processes on server CPU* is the time the server's CPU ran something else during the run (user, nice, system and steal time of its /proc/stat line, less the server's own): the noise of other work on the machine.", res.Pinning, res.Rounds, res.Duration, res.SatDuration)
	b.p("**CPU per query** is the server's own CPU time over a run (utime + stime of /proc/PID/stat, read before and after dnsperf) divided by the queries dnsperf got answers to. **Latency percentiles** come from dnsperf's per-query lines (`-v`; Debian's dnsperf 2.10 has no histogram option), as dnsperf measured them, load generator included.")
	b.p("**Over TCP** the whole answer of the largest headless service is asked by the tool's own client (`go run . tcpload`, pinned like dnsperf: 4 connections, one query outstanding on each, sends paced at the fixed load), because Debian's dnsperf 2.10 does not complete TCP answers much over 16 KiB (in a check, 15 KB answers completed and 27 KB ones never did). It reads every answer whole and checks its rcode and record count (a short answer would be counted apart); latencies run from the send to the answer's last byte, and *answer bytes* is the DNS message's length.")
	b.p("**Query mix** (10,000 queries drawn with a fixed seed, dnsperf loops over them): %s. The search-path misses are what a pod with `ndots:5` sends first for an external name: `google.com.<ns>.svc.cluster.local`, `google.com.svc.cluster.local`, `google.com.cluster.local`. The clusterset mix: %s.", res.Mix, res.MCMix)
	b.p("**Fixture.** Created through the real kube-apiserver by a parallel client-go loader (16 requests in flight): services of two named TCP ports, each with an EndpointSlice of ready endpoints (headless ones with StatefulSet-style hostnames), pods with their IPs written to the status (nothing schedules them), ServiceImports (ClusterSetIP, and every fifth Headless with EndpointSlices from two member clusters).")
	b.p("**Programming latency.** %d changes made one after the other through the API, in turn a new ClusterIP service, an endpoint added to a headless service, and that endpoint made unready; for each, both servers are polled over UDP every millisecond until the answer shows the change (the new address, or its absence). The time runs from just before the API request to the first answer that shows it, so it includes the API server's write and watch delivery, the same for both plugins.", res.Changes)
	b.p("**In-process benchmarks** (`bench/inprocess`): one process starts CoreDNS from a Corefile with one server block per plugin (same options) against the same API server and data (after the churn), takes each block's plugin handler at start-up (a small directive, `benchgrab`, reads it from the server block's config), waits until both plugins give the expected answer to every case, and times `ServeDNS` directly with a ResponseWriter that discards the reply: the plugin's own work, without network or packing.")
}

func writeReproduce(b *md, res *results) {
	b.p("## Reproduce")
	b.line("- everything: `make bench` (default scale), `make bench SCALE=small`, one shape: `make bench SHAPES=S2` (the Mesos shapes: `make bench SHAPES=M1`, `SHAPES=M1,M2`); the tool: `%s`", res.Command)
	names := map[string]string{testMixed: "cluster mix, fixed load", testTCP: "headless over TCP", testMC: "clusterset mix", testSaturated: "saturation"}
	for _, t := range []string{testMixed, testTCP, testMC, testSaturated} {
		if c, ok := res.Commands[t]; ok {
			b.line("- %s: `%s` against each target's port, its CPU from /proc/PID/stat before and after", names[t], c)
		}
	}
	if res.GoBenchCommand != "" {
		b.line("- in-process: `%s`", res.GoBenchCommand)
	}
	for _, mr := range res.Mesos {
		if mr.MixCommand != "" {
			b.line("- %s Mesos mix, fixed load: `%s` against each target's port, its CPU from /proc/PID/stat before and after", mr.Shape.Name, mr.MixCommand)
		}
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
