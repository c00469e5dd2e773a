package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/schemadns/schemadns/internal/toolreport"
)

func markdown(res *results) string {
	var b toolreport.Doc
	b.Heading(1, "Absorption")
	b.Para("<!-- Written by the absorption benchmark (bench/absorb, `make absorb`). Do not edit by hand: run it again. -->")
	if res.Note != "" {
		b.Para("> **%s**", res.Note)
	}
	b.Para("Run of %s, %s, at scale %s. Command: `%s` (what `make absorb` runs, from the repository's top directory).",
		res.Started.UTC().Format("2006-01-02 15:04 UTC"), res.Finished.Sub(res.Started).Round(time.Second), res.Scale, res.Command)
	b.Para("How many EndpointSlice updates a second each DNS server takes in on **one core**: **kubeschema** (ours) " +
		"against **stock**, CoreDNS's own `kubernetes` plugin compiled into the same `bin/coredns`, with the same " +
		"options. The real API server of this machine cannot write updates that fast (the churn of " +
		"[reliability.md](reliability.md) says why), so this tool plays the API server itself and feeds a watch " +
		"stream encoded in advance.")
	writeMachine(&b, res)
	writeTargets(&b, res)
	for _, sr := range res.Shapes {
		writeShape(&b, sr)
	}
	writeMethod(&b, res)
	if len(res.Errors) > 0 {
		b.Heading(2, "Errors")
		b.List(res.Errors)
	}
	return b.String()
}

func writeMachine(b *toolreport.Doc, res *results) {
	b.Heading(2, "Machine")
	pin := "none (-pin=false)"
	if res.Pinned {
		pin = fmt.Sprintf("taskset: the DNS server on CPU %d with GOMAXPROCS=1, this tool (fake API server, feeder, "+
			"checker) on CPU %d", res.ServerCPU, res.ClientCPU)
	}
	t := res.Machine.Table()
	t.Row("pinning", pin)
	b.Table(t)
}

func writeTargets(b *toolreport.Doc, res *results) {
	b.Heading(2, "Targets")
	t := toolreport.NewTable("target", "shape", "goal", "measured (median, min–max)", "").TextColumns(2)
	met := func(ok bool) string { return toolreport.Bold(toolreport.Met(ok)) }
	for _, sr := range res.Shapes {
		o, st := sr.ByTarget[keyOurs], sr.ByTarget[keyStock]
		if o == nil {
			continue
		}
		shape := sr.Shape.Name + " " + sr.Shape.Title
		t.Row("updates/s absorbed by kubeschema on one core", shape, fmt.Sprintf("≥ %d", rateTarget),
			fmt.Sprintf("%.0f (%.0f–%.0f)", o.Rate, o.RateMin, o.RateMax), met(o.Rate >= rateTarget))
		if st != nil {
			t.Row("updates/s absorbed: kubeschema / stock", shape, fmt.Sprintf("≥ %.0f", ratioTarget),
				fmt.Sprintf("%.2f (%.0f / %.0f)", sr.RatioRate, o.Rate, st.Rate), met(sr.RatioRate >= ratioTarget))
		}
		wrong := o.Check.Wrong + o.Check.Back + o.Check.SpotWrong
		t.Row("wrong answers during the absorption, stale names at the end: kubeschema", shape, "0",
			fmt.Sprintf("%d wrong of %d, %d stale", wrong, o.Check.Answers+o.Check.Spot, o.StaleAtEnd),
			met(wrong == 0 && o.StaleAtEnd == 0))
	}
	b.Table(t)
}

func writeShape(b *toolreport.Doc, sr *shapeResult) {
	s := sr.Shape
	b.Heading(2, "%s %s", s.Name, s.Title)
	b.Para("%s; %d updates, each to one of %d headless services picked at random (%d changed), encoded in %.1f s "+
		"before the servers start: the EndpointSlice list is %s MiB, the update events %s MiB (%d bytes each, framed).",
		s.describe(), sr.Updates, s.Headless, sr.Names, sr.EncodeSec, toolreport.MiB(int64(sr.ListBytes)),
		toolreport.MiB(int64(sr.EventBytes)), sr.EventBytes/max(sr.Updates, 1))
	t := toolreport.NewTable("server", "updates fed", "updates/s, median (min–max)", "× stock", "seconds, median",
		"server CPU µs per update, median (min–max)", "× stock", "updates per server CPU-second",
		"answers checked (A, at queries/s; SRV and PTR)", "wrong (torn; older than seen; SRV/PTR)",
		"queries unanswered", "found behind after the last name", "stale at the end")
	for _, tg := range targets {
		x := sr.ByTarget[tg.Key]
		if x == nil {
			continue
		}
		ratio, cpuRatio := "1.00", "1.00"
		if tg.Key == keyOurs {
			ratio, cpuRatio = fmt.Sprintf("**%.2f**", sr.RatioRate), fmt.Sprintf("%.2f", sr.RatioCPU)
		}
		c := x.Check
		t.Row(tg.Key, fmt.Sprintf("%d × %d runs", sr.Updates, x.Runs),
			fmt.Sprintf("**%.0f** (%.0f–%.0f)", x.Rate, x.RateMin, x.RateMax), ratio, fmt.Sprintf("%.2f", x.Seconds),
			fmt.Sprintf("**%.1f** (%.1f–%.1f)", x.CPUPer, x.CPUPerMin, x.CPUPerMax), cpuRatio, fmt.Sprintf("%.0f", 1e6/x.CPUPer),
			fmt.Sprintf("%d at %.0f/s; %d", c.Answers, x.CheckRate, c.Spot),
			fmt.Sprintf("%d (%d; %d; %d)", c.Wrong+c.Back+c.SpotWrong, c.Wrong, c.Back, c.SpotWrong),
			fmt.Sprint(c.Errors), fmt.Sprint(x.FoundStale), fmt.Sprint(x.StaleAtEnd))
	}
	b.Table(t)
	if o := sr.ByTarget[keyOurs]; o != nil && o.Seconds < minRun.Seconds() {
		b.Para("**Short runs**: kubeschema took in the updates in %.1f s, under the %.0f s the figures are meant to "+
			"span; give more with `-updates`.", o.Seconds, minRun.Seconds())
	}
	b.Para("Every run:")
	pct := toolreport.Percent
	runs := toolreport.NewTable("run", "server", "updates/s", "seconds", "feed written in, s", "CPU µs per update",
		"server busy", "other processes on its core", "this tool's CPU / its core busy", "start to synced, s",
		"requests to the fake API server")
	for i, r := range sr.Rounds {
		runs.Row(fmt.Sprint(i+1), r.Target, fmt.Sprintf("%.0f", r.Rate), fmt.Sprintf("%.2f", r.Seconds),
			fmt.Sprintf("%.2f", r.FeedSec), fmt.Sprintf("%.1f", r.CPUPer), pct(r.Busy), pct(r.Others),
			pct(r.Tool)+" / "+pct(r.ToolCore), fmt.Sprintf("%.2f", r.SyncSec), toolreport.Pairs(r.Requests, "%s %d"))
	}
	b.Table(runs)
}

// The method's paragraphs.
const (
	methodServer = "**The fake API server.** Plain HTTP/1.1 on loopback (a real API server speaks HTTP/2 over " +
		"TLS; here each watch is a TCP connection of its own and there is no TLS to decrypt, for either server), " +
		"in this tool's process. It serves what both servers ask for: LIST and WATCH of `services`, " +
		"`namespaces` and `pods` (v1; no pods: `pods verified` is set for both, as in bench) and " +
		"`endpointslices` (discovery.k8s.io/v1); `/readyz`, `/livez`, `/healthz`, `/version`, the discovery " +
		"documents `/api`, `/apis`, `/api/v1` and `/apis/discovery.k8s.io/v1`, and SelfSubjectAccessReviews " +
		"(allowed) and SelfSubjectReviews; anything else, `/apis/networking.k8s.io/v1` (ServiceCIDRs) " +
		"included, gets a 404 `Status` and is listed in the run's requests. Lists and watches are only served " +
		"in protobuf, the encoding both servers ask for, written as kube-apiserver 1.36 writes it: a list or " +
		"object is apimachinery's protobuf serializer's output (the `k8s\\x00` magic and a `runtime.Unknown` " +
		"envelope), a watch event a `metav1.WatchEvent` whose object is so encoded, itself encoded by the raw " +
		"protobuf serializer and written as one length-delimited frame (4-byte big-endian length), " +
		"`Content-Type: application/vnd.kubernetes.protobuf;stream=watch`, chunked. client-go 0.37 syncs with " +
		"a watch-list (`sendInitialEvents=true`, WatchListClient on by default), which the fake server serves " +
		"as kube-apiserver 1.36 does (WatchList on, no compression of the stream): an ADDED event per object, " +
		"then a BOOKMARK carrying `k8s.io/initial-events-end`, then the watch goes on; a plain LIST and a " +
		"watch from its resourceVersion are served too (the *requests* column shows which each run used). The " +
		"objects are what the API server stores: uid, resourceVersion, generation, creationTimestamp, labels " +
		"`kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`, an ownerReference to the " +
		"Service, the `endpoints.kubernetes.io/last-change-trigger-time` annotation, a managedFields entry " +
		"like the endpointslice-controller's; endpoints with an address, ready/serving/terminating, a " +
		"hostname, a Pod targetRef, nodeName and zone; two ports."

	// methodRun's verbs: the poll interval, the settle timeout, the
	// check's and the poll's queries/s.
	methodRun = "**A run.** For each server in turn (the order alternates by round), a fresh fake API server and " +
		"a fresh `bin/coredns -conf Corefile` with one server block on 127.0.0.1 holding only the plugin under " +
		"test (`kubeschema` or `kubernetes`, zones `cluster.local in-addr.arpa ip6.arpa`, `kubeconfig` and " +
		"`pods verified`; no cache plugin), started with `taskset` and GOMAXPROCS=1. The server has synced when " +
		"the last headless service answers with all its initial addresses; two seconds later every update is " +
		"released at once on its EndpointSlice watch, written as fast as the server reads (TCP flow control " +
		"paces it). Each update replaces one endpoint's address of one headless service's slice (the endpoint " +
		"after the one changed before, as bench's churn does), with a new resourceVersion and generation: a " +
		"MODIFIED event of the whole slice, as the API server sends it. The name of the last update is asked " +
		"every %s until it shows its final address set; then every changed name is asked until it shows its " +
		"own: none should be behind, since a server applies its one watch stream in order (*found behind after " +
		"the last name* counts those that were, and the end moves to when the last of them caught up; *stale at " +
		"the end* are those that did not within %s, which fails the run). **Updates/s** = updates fed / (the " +
		"end − the first update byte written). **Server CPU per update** is the server's utime+stime from /proc " +
		"over the same span (read when the last update's name showed its state), divided by the updates; " +
		"*updates per server CPU-second* is its inverse, the rate a server would reach with its core to itself " +
		"(on a shared machine other processes take part of it: the runs' table says how much). The model " +
		"check's and the poll's queries are in it (about %d + %.0f queries/s, a small share)."

	// methodCheck's verb: the check's queries/s.
	methodCheck = "**The model check.** During the absorption, up to %d queries/s (16 sockets, a query waiting " +
		"for its answer before the socket asks again, so fewer when answers are slow: the rate achieved is in " +
		"each shape's table; UDP with an EDNS0 buffer of 4096, TCP again when truncated) ask A records of " +
		"changed names at random; every answer must be exactly the address set of a state written for that " +
		"name (its initial state or one after one of its updates; all are known before the run), else it is " +
		"*wrong*, and must not be older than a state this checker has already seen for the name. After each " +
		"run, SRV (`_http._tcp`, one record per endpoint to its hostname, port 8080) of the first changed " +
		"names and the PTR of the address each last received are checked too. A wrong answer, a name stale at " +
		"the end, a server that never synced or a watch opened again during the run fails the tool (non-zero " +
		"exit, listed under Errors)."
)

func writeMethod(b *toolreport.Doc, res *results) {
	b.Heading(2, "Method")
	b.Para(methodServer)
	b.Para(methodRun, pollInterval, settleTimeout, res.CheckRate, float64(time.Second/pollInterval))
	b.Para(methodCheck, res.CheckRate)
}

// minRun is the least a run should take for its rate to mean much.
const minRun = 10 * time.Second

// summaryText is what the tool prints at the end.
func summaryText(res *results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "absorption (updates/s on one core, median of rounds; CPU µs per update):\n")
	for _, sr := range res.Shapes {
		o, st := sr.ByTarget[keyOurs], sr.ByTarget[keyStock]
		line := fmt.Sprintf("  %s %d updates:", sr.Shape.Name, sr.Updates)
		if o != nil {
			line += fmt.Sprintf(" kubeschema %.0f/s (%.1f µs)", o.Rate, o.CPUPer)
		}
		if st != nil {
			line += fmt.Sprintf(", stock %.0f/s (%.1f µs)", st.Rate, st.CPUPer)
		}
		if o != nil && st != nil {
			line += fmt.Sprintf(", ratio %.2f (target ≥ %.0f/s and ≥ %.0f×)", sr.RatioRate, float64(rateTarget), ratioTarget)
		}
		fmt.Fprintln(&b, line)
	}
	if len(res.Errors) > 0 {
		fmt.Fprintf(&b, "  %d errors\n", len(res.Errors))
	}
	return b.String()
}
