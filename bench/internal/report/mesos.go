package report

import (
	"fmt"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/mesosbench"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// mesosShapeList is "M1, M2 (M2 the worst case)".
func mesosShapeList(res *results.Results) string {
	var names, worst []string
	for _, mr := range res.Mesos {
		names = append(names, mr.Shape.Name)
		if mr.Shape.Worst {
			worst = append(worst, mr.Shape.Name)
		}
	}
	out := strings.Join(names, ", ")
	if len(worst) > 0 {
		out += fmt.Sprintf(" (%s the worst case)", strings.Join(worst, ", "))
	}
	return out
}

// mesosGoals are the targets of the Mesos shapes: an unchanged poll costs
// at most a tenth of a changed one and publishes nothing; a new state with
// the same records publishes nothing either.
func mesosGoals(res *results.Results) []goal {
	byName := map[string]*mesosbench.Result{}
	for _, mr := range res.Mesos {
		byName[mr.Shape.Name] = mr
	}
	var out []goal
	for _, name := range []string{"M1", "M2"} {
		mr := byName[name]
		label := name
		if mr != nil {
			label += " " + mr.Shape.Title
		}
		unchanged, one, same := mr.Series(mesosbench.PollUnchanged), mr.Series(mesosbench.PollOne), mr.Series(mesosbench.PollSame)
		cost := goal{What: "server CPU per unchanged poll (the same bytes) / per changed poll (one task replaced), " +
			"each net of an idle process", Shape: label, Goal: "≤ 0.10", Met: "not measured", Measured: toolreport.Dash}
		if a, b := unchanged.PerPollMs(), one.PerPollMs(); unchanged.Polls > 0 && one.Polls > 0 && b > 0 {
			cost.Measured = toolreport.RatioOf(a, b, fmt.Sprintf("ms, %d polls each", unchanged.Polls))
			cost.Met = toolreport.Met(a <= 0.1*b)
		}
		quiet := goal{What: "unchanged polls publish nothing: the SOA serial kept, every one counted in " +
			"`polls_total{result=\"unchanged\"}`", Shape: label, Goal: "all", Met: "not measured", Measured: toolreport.Dash}
		if unchanged.Polls > 0 {
			quiet.Measured = fmt.Sprintf("%d of %d counted unchanged; serial %s",
				unchanged.Results["unchanged"], unchanged.Polls, serialText(unchanged))
			quiet.Met = toolreport.Met(unchanged.Results["unchanged"] == unchanged.Polls && len(unchanged.Results) == 1 &&
				unchanged.SerialBefore == unchanged.SerialAfter)
		}
		sameRecords := goal{What: "new bytes with the same records (a status timestamp) publish nothing: the serial " +
			"kept, every one counted in `states_unchanged_total`", Shape: label, Goal: "all", Met: "not measured",
			Measured: toolreport.Dash}
		if same.Polls > 0 {
			sameRecords.Measured = fmt.Sprintf("%d of %d counted; serial %s", same.StatesUnchanged, same.Polls, serialText(same))
			sameRecords.Met = toolreport.Met(same.StatesUnchanged == same.Polls && same.SerialBefore == same.SerialAfter)
		}
		out = append(out, cost, quiet, sameRecords)
	}
	return out
}

// serialText is "kept" or "moved (a → b)".
func serialText(s mesosbench.PollSeries) string {
	if s.SerialBefore == s.SerialAfter {
		return "kept"
	}
	return fmt.Sprintf("moved (%d → %d)", s.SerialBefore, s.SerialAfter)
}

// writeMesos writes the Mesos section.
func writeMesos(b *toolreport.Doc, res *results.Results) {
	if len(res.Mesos) == 0 {
		return
	}
	b.Heading(2, "Mesos")
	b.Para("**mesosschema** (ours) serves the Mesos-DNS names of a Mesos master's state, polled over HTTP; its " +
		"**floor** here is CoreDNS's stock **file** plugin serving the same records from a zone file (made from " +
		"mesosschema's AXFR through the stock `transfer` plugin), in the same binary: a static zone that polls " +
		"nothing.")
	writeMesosShapes(b, res)
	writeMesosPolls(b, res)
	writeMesosLatency(b, res)
	writeMesosMemory(b, res)
	for _, mr := range res.Mesos {
		writeMesosQueries(b, mr)
	}
	writeMesosMethod(b, res)
}

func writeMesosShapes(b *toolreport.Doc, res *results.Results) {
	b.Heading(3, "Mesos shapes")
	k := toolreport.Thousands
	t := toolreport.NewTable("shape", "stands for", "running tasks", "tasks in other states", "apps (task names)",
		"frameworks", "agents", "names served", "records (AXFR)", "/master/state MB (JSON)", "MB gzipped (as served)").
		TextColumns(2)
	var worst []string
	for _, mr := range res.Mesos {
		f := mr.State
		t.Row(mr.Shape.Name, mr.Shape.Title, k(f.Running), k(f.Other), k(f.Apps),
			fmt.Sprint(f.Frameworks), fmt.Sprint(f.Agents), k(f.Names), k(f.ZoneRecords),
			fmt.Sprintf("%.1f", float64(f.JSONBytes)/1e6), fmt.Sprintf("%.2f", float64(f.GzipBytes)/1e6))
		if mr.Shape.Worst {
			worst = append(worst, mr.Shape.Name)
		}
	}
	b.Table(t)
	for _, mr := range res.Mesos {
		b.Line("- **%s**: %s.", mr.Shape.Name, mr.Shape.Describe())
	}
	b.End()
	text := "Each figure below names its shape."
	if len(worst) > 0 {
		text += fmt.Sprintf(" %s is the worst case: the same cluster with every app alone under its name (the "+
			"most names), every task on a dual-stack container network and named DiscoveryInfo ports, so the most "+
			"records and the largest state; its figures bound the others, which are a typical cluster's.",
			strings.Join(worst, ", "))
	} else {
		text += " The worst case, M2 (every app alone under its name, dual-stack container addresses, named " +
			"ports: the most records and the largest state), was not measured in this run: these figures are a " +
			"typical cluster's, not a bound (`make bench SHAPES=M1,M2`)."
	}
	b.Para("%s The states are made by `mesosstatetest.Generate` and written by `mesosstatetest.Marshal` as a "+
		"Mesos 1.11 master writes `/master/state`, with the fields DNS does not read (resources, executors, "+
		"health checks, labels).", text)
}

func writeMesosPolls(b *toolreport.Doc, res *results.Results) {
	b.Heading(3, "Server CPU per poll")
	t := toolreport.NewTable("shape", "poll", "each poll serves", "polls", "server CPU ms per poll, net", "× one-task",
		"CPU s: poller / idle process", "window s", "mean poll ms (fetch, decode)", "polls_total by result",
		"states_unchanged_total", "SOA serial").TextColumns(3)
	for _, mr := range res.Mesos {
		one := mr.Series(mesosbench.PollOne).PerPollMs()
		for _, s := range mr.Polls {
			t.Row(mr.Shape.Name, s.Kind, s.What, fmt.Sprint(s.Polls),
				fmt.Sprintf("**%.1f**", s.PerPollMs()), toolreport.Ratio(s.PerPollMs(), one),
				fmt.Sprintf("%.2f / %.2f", s.CPU, s.IdleCPU), fmt.Sprintf("%.1f", s.Seconds),
				fmt.Sprintf("%.0f", s.PollSeconds*1e3), resultsText(s.Results), fmt.Sprint(s.StatesUnchanged), serialText(s))
		}
	}
	b.Table(t)
	b.Para("The poller is mesosschema polling every second (the shortest refresh it takes), pinned to the server " +
		"CPU like every server. A series serves it one body a poll: the stand-in master is given the next body " +
		"right after a poll is answered, which leaves the poller a whole refresh before it asks again. *Server " +
		"CPU per poll* is the poller's utime+stime from the first poll's arrival at the master to the arrival of " +
		"the poll after the last (while it waits for the answer), less the idle process's over the same window " +
		"(mesosschema with the same state, polling once an hour, on the same CPU), divided by the polls. The " +
		"poller's metrics and SOA serial are read at those two moments, outside the window. *Mean poll* is " +
		"`coredns_mesosschema_poll_duration_seconds` over the window: the fetch through the decode, not the " +
		"records' build or publication. A poll of the same bytes is neither decoded nor published; new bytes " +
		"are decoded, and publish nothing when the records are the same. The CPU is counted in ticks of 10 ms " +
		"(USER_HZ) over the whole window, not per poll.")
}

// resultsText is "changed 20, unchanged 1".
func resultsText(m map[string]int) string {
	if len(m) == 0 {
		return toolreport.Dash
	}
	return toolreport.Pairs(m, "%s %d")
}

func writeMesosLatency(b *toolreport.Doc, res *results.Results) {
	b.Heading(3, "Poll to answer")
	t := toolreport.NewTable("shape", "change", "tasks replaced", "changes", "median ms", "p90 ms", "worst ms",
		"transfer ms, median", "timeouts (10 s)").TextColumns(2)
	for _, mr := range res.Mesos {
		for _, l := range mr.Latency {
			t.Row(mr.Shape.Name, l.Kind, toolreport.Thousands(l.Replaced), fmt.Sprint(len(l.Ms)),
				fmt.Sprintf("**%.0f**", perf.Median(l.Ms)), fmt.Sprintf("%.0f", perf.Percentile(l.Ms, 90)), fmt.Sprintf("**%.0f**", perf.MaxOf(l.Ms)),
				fmt.Sprintf("%.1f", perf.Median(l.TransferMs)), fmt.Sprint(l.Timeouts))
		}
	}
	b.Table(t)
	b.Para("Each change replaces running tasks of the state served before it by new instances of the same apps " +
		"(new task IDs, so new instance names, on agents picked at random, with new container addresses), as a " +
		"rolling restart does, and is served from one poll of the poller on. The time runs from the moment the " +
		"stand-in master started answering that poll (its status line reached the tap in front of it) to the " +
		"first DNS answer that showed the change: a checker asks the new instance name of one replaced task for " +
		"A over UDP every millisecond from the moment the change is set, until the answer holds its address. It " +
		"includes the transfer of the state (*transfer*: its first to last byte through the tap), the decode, " +
		"the build of the records and their publication; the poll interval is not in it. The checker's queries " +
		"land on the same CPU as the poll's work.")
}

func writeMesosMemory(b *toolreport.Doc, res *results.Results) {
	b.Heading(3, "Memory")
	t := toolreport.NewTable("shape", "target", "read", "Go heap after GC MiB", "RSS MiB", "peak RSS (VmHWM) MiB",
		"start to first answer s").TextColumns(3)
	for _, mr := range res.Mesos {
		for _, key := range []string{mesosbench.KeyMesos, mesosbench.KeyFile, mesosbench.KeyMesosPoller} {
			m, ok := mr.Memory[key]
			if !ok {
				continue
			}
			when := "at rest, 2 s after its first answer"
			if key == mesosbench.KeyMesosPoller {
				when = fmt.Sprintf("after the poll tests, %d polls in all", mr.PollerPolls)
			}
			t.Row(mr.Shape.Name, key, when, toolreport.Bold(toolreport.MiB(m.HeapInuse)), toolreport.MiB(m.RSS),
				toolreport.MiB(m.PeakRSS), fmt.Sprintf("%.2f", mr.FirstAnswer[key]))
		}
	}
	b.Table(t)
	b.Para("*Go heap after GC* is `HeapInuse` right after a forced GC (the pprof heap profile with `gc=1`), as " +
		"for the cluster shapes; the peak RSS is the process's since its start. mesosschema keeps no decoded copy " +
		"of the state once its records are made (without `http`); its master client keeps, between polls, only " +
		"the body as it came (gzipped: the *MB gzipped* of the shapes table), to recognise the same bytes. A new " +
		"state is decompressed into a buffer sized by the gzip trailer and dropped after the decode. The " +
		"poller's peak adds the body, the decoded state and the new records next to the records served; its " +
		"heap after GC includes what the last poll left for the collector's next cycle to reuse. `-profile` " +
		"saves each server's heap profile.")
}

func writeMesosQueries(b *toolreport.Doc, mr *mesosbench.Result) {
	p := mr.Perf
	if p == nil || len(p.Runs[mesosbench.TestMix]) == 0 {
		return
	}
	perfTable(b, p, mesosbench.TestMix, fmt.Sprintf("%s: Mesos mix over UDP at %d queries/s", mr.Shape.Name, p.Rates[mesosbench.TestMix]),
		versus{"file", mesosbench.KeyFile})
	ours, file := p.Runs[mesosbench.TestMix][mesosbench.KeyMesos], p.Runs[mesosbench.TestMix][mesosbench.KeyFile]
	t := toolreport.NewTable("round", "mesosschema µs/query", "file µs/query", "×", "mesosschema p99 ms", "file p99 ms",
		"other processes on server CPU")
	for i := range min(len(ours), len(file)) {
		t.Row(fmt.Sprint(i+1), fmt.Sprintf("%.1f", ours[i].CPUPerQuery), fmt.Sprintf("%.1f", file[i].CPUPerQuery),
			toolreport.Ratio(ours[i].CPUPerQuery, file[i].CPUPerQuery), fmt.Sprintf("%.3f", ours[i].P99),
			fmt.Sprintf("%.3f", file[i].P99), toolreport.Percent(ours[i].OtherBusy)+" / "+toolreport.Percent(file[i].OtherBusy))
	}
	b.Table(t)
	if lo, hi, ok := p.RoundRatios(mesosbench.TestMix, mesosbench.KeyMesos, mesosbench.KeyFile); ok {
		text := fmt.Sprintf("Per round, mesosschema / file: best %.2f, worst %.2f.", lo, hi)
		if c := p.Calibration[mesosbench.TestMix]; len(c) > 0 {
			text += fmt.Sprintf(" Saturated (the calibration, once): %s.", toolreport.Pairs(c, "%s %.0f q/s"))
		}
		b.Para("%s", text)
	}
	b.Para("Mix: %s. The names are those of the running tasks (task, instance, `_task._tcp` and `.slave` names) "+
		"as mesosstate's label rules make them from the state, each checked against the AXFR: %s of %s found.",
		mr.Mix, toolreport.Thousands(mr.MixNames.Found), toolreport.Thousands(mr.MixNames.Expected))
	writeCrossCheck(b, p, "Same answers? ")
	for _, n := range mr.Notes {
		b.Line("- Note: %s", n)
	}
	b.End()
}

func writeMesosMethod(b *toolreport.Doc, res *results.Results) {
	b.Heading(3, "How the Mesos shapes are measured")
	writeTargets(b, res, mesosbench.KeyMesos, mesosbench.KeyMesosPoller, mesosbench.KeyFile)
	b.Para("The master is internal/mesosmaster's stand-in, in the bench process, behind a tap (an HTTP reverse proxy "+
		"on loopback) that the servers are given as their only master and that the state names as its leader; "+
		"it serves `/master/state` gzipped, as a master does for a client that accepts gzip, each body "+
		"compressed once before the poll that gets it. Every server is its own `bin/coredns` with the plugin "+
		"under test alone in a server block (`mesosschema mesos { masters TAP; refresh R; ttl %d }`, or "+
		"`file ZONEFILE mesos`) and pprof and prometheus in another, pinned to the server CPU; the bench "+
		"process is moved to the client CPU during the poll tests. %s.", mesosbench.TTL, res.Pinning)
	b.Para("**CPU per query**: dnsperf sends the mix (%d queries drawn with a fixed seed from the AXFR's names, "+
		"looped) at a fixed load, half the slower target's saturated rate (`-mesos-qps` sets it), to "+
		"mesosschema and to file in turn, %d rounds of %s; CPU per query is the server's utime+stime over the "+
		"run divided by the queries answered. mesosschema polls once an hour there, so no poll falls in a run: "+
		"the poll's cost is the poll table's, which at a refresh of R seconds adds (CPU per poll)/R of a core. "+
		"The answers of both to the mix's first distinct queries are compared before the rounds.",
		querymix.Lines, res.Rounds, res.Duration)
}
