package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/internal/toolreport"
)

func writeReport(cfg *config, res *results) error {
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files := map[string]string{
		"overload.json": string(js) + "\n",
		"overload.md":   page(res),
		"overload.svg":  chart(res),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(cfg.OutDir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	logf("wrote %s/overload.{md,svg,json}", cfg.OutDir)
	return toolreport.OverloadSummary.SpliceFile(filepath.Join(cfg.OutDir, "benchmarks.md"), summary(res))
}

// find is the run of a server at a multiple against an upstream.
func (res *results) find(server, up string, mult float64) *runResult {
	for _, r := range res.Runs {
		if r.Server == server && r.Upstream == up && r.Multiple == mult {
			return r
		}
	}
	return nil
}

func (r *runResult) clusterGoodput() float64 {
	return float64(r.Load.Good[kindCluster]) / r.Load.Seconds
}
func (r *runResult) externalGoodput() float64 {
	return float64(r.Load.Good[kindExternal]) / r.Load.Seconds
}

// lost is the share of queries with no answer within the timeout.
func (r *runResult) lost() float64 {
	answered := r.Load.Answered[kindCluster] + r.Load.Answered[kindExternal]
	return 1 - float64(answered)/float64(max(r.Load.Sent, 1))
}

func (r *runResult) rcode(name string) int {
	return r.Load.Rcodes[kindCluster][name] + r.Load.Rcodes[kindExternal][name]
}

// multiples are the runs' multiples, in order.
func (res *results) multiples() []float64 {
	var ms []float64
	for _, r := range res.Runs {
		if !slices.Contains(ms, r.Multiple) {
			ms = append(ms, r.Multiple)
		}
	}
	slices.Sort(ms)
	return ms
}

func (res *results) upstreams() []string {
	var us []string
	for _, r := range res.Runs {
		if !slices.Contains(us, r.Upstream) {
			us = append(us, r.Upstream)
		}
	}
	return us
}

func (res *results) servers() []string {
	var ss []string
	for _, k := range []string{keyOurs, keyOursPlain, keyStock, keyStockShed} {
		if _, ok := res.Servers[k]; ok {
			ss = append(ss, k)
		}
	}
	return ss
}

// upstreamText says what the upstream did.
func upstreamText(up string) string {
	if up == upstreamSilent {
		return "the upstream never answers"
	}
	return fmt.Sprintf("the upstream answers after %s", slowDelay)
}

// table is the figures of every run against one upstream.
func table(res *results, up string) *toolreport.Table {
	t := toolreport.NewTable("load", "server", "offered q/s (sent)", "cluster answers/s", "× ours at 1×", "external answers/s",
		"cluster p50 ms", "cluster p99 ms", "p99 from 1 s on", "no answer", "REFUSED", "SERVFAIL", "RSS MiB before → peak", "goroutines peak",
		"/health max s", "/ready max s", "recovery s", "dropped by the server", "other processes on server CPU").TextColumns(2)
	for _, mult := range res.multiples() {
		for _, key := range res.servers() {
			r := res.find(key, up, mult)
			if r == nil {
				continue
			}
			base := res.find(keyOurs, up, 1)
			vsOurs := "–"
			if base != nil && base.clusterGoodput() > 0 {
				vsOurs = fmt.Sprintf("%.2f", r.clusterGoodput()/base.clusterGoodput())
			}
			t.Row(fmt.Sprintf("%g×", mult), key, fmt.Sprintf("%d (%d)", int(float64(r.Load.Offered)/r.Load.Seconds), int(float64(r.Load.Sent)/r.Load.Seconds)),
				fmt.Sprintf("%.0f", r.clusterGoodput()), vsOurs, fmt.Sprintf("%.0f", r.externalGoodput()),
				fmt.Sprintf("%.2f", r.P50), fmt.Sprintf("%.2f", r.P99), fmt.Sprintf("%.2f", r.P99Settled), toolreport.Percent(r.lost()),
				toolreport.Thousands(r.rcode("REFUSED")), toolreport.Thousands(r.rcode("SERVFAIL")),
				toolreport.MiB(r.RSSBefore)+" → "+toolreport.MiB(r.Watch.RSSPeak), fmt.Sprint(r.Watch.GoroutinesPeak),
				fmt.Sprintf("%.3f", r.Watch.HealthMax), fmt.Sprintf("%.3f", r.Watch.ReadyMax), recoveryText(r), dropsText(r), toolreport.Percent(r.OtherBusy))
		}
	}
	return t
}

func recoveryText(r *runResult) string {
	if r.Crashed != "" {
		return "crashed"
	}
	if r.Recovery >= recoveryLimit.Seconds() {
		return fmt.Sprintf("> %g", recoveryLimit.Seconds())
	}
	return fmt.Sprintf("%.2f", r.Recovery)
}

func dropsText(r *runResult) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Shed)) {
		if r.Shed[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", k, toolreport.Thousands(int(r.Shed[k]))))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// goals judges the targets on ours at 2× and 4× saturation.
func goals(res *results) *toolreport.Table {
	t := toolreport.NewTable("target", "measured", "met").TextColumns(2)
	for _, up := range res.upstreams() {
		one, two, four := res.find(keyOurs, up, 1), res.find(keyOurs, up, 2), res.find(keyOurs, up, 4)
		if one == nil || two == nil {
			continue
		}
		ratio := two.clusterGoodput() / one.clusterGoodput()
		t.Row(fmt.Sprintf("2×, %s: cluster answers ≥ 90%% of ours at 1×", upstreamText(up)),
			fmt.Sprintf("%.0f / %.0f = %.2f", two.clusterGoodput(), one.clusterGoodput(), ratio), toolreport.Met(ratio >= 0.9))
		t.Row(fmt.Sprintf("2×, %s: p99 of answered cluster queries ≤ 20 ms", upstreamText(up)),
			fmt.Sprintf("%.2f ms (of those sent from 1 s on: %.2f ms)", two.P99, two.P99Settled), toolreport.Met(two.P99 <= 20))
		rss := float64(two.Watch.RSSPeak) / float64(one.Watch.RSSPeak)
		t.Row(fmt.Sprintf("2×, %s: peak RSS ≤ 1.3 × at 1×", upstreamText(up)),
			fmt.Sprintf("%s / %s = %.2f", toolreport.MiB(two.Watch.RSSPeak), toolreport.MiB(one.Watch.RSSPeak), rss), toolreport.Met(rss <= 1.3))
		t.Row(fmt.Sprintf("2×, %s: /health within 1 s", upstreamText(up)),
			fmt.Sprintf("slowest %.3f s of %d probes", two.Watch.HealthMax, two.Watch.HealthProbes), toolreport.Met(two.Watch.HealthMax < 1))
		t.Row(fmt.Sprintf("2×, %s: recovered within 1 s", upstreamText(up)), recoveryText(two)+" s", toolreport.Met(two.Crashed == "" && two.Recovery <= 1))
		if four != nil {
			t.Row(fmt.Sprintf("4×, %s: no crash, no OOM", upstreamText(up)),
				fmt.Sprintf("%s; peak RSS %s MiB", map[bool]string{true: "alive", false: "crashed"}[four.Crashed == ""], toolreport.MiB(four.Watch.RSSPeak)),
				toolreport.Met(four.Crashed == ""))
		}
	}
	return t
}

// summary is the section in docs/benchmarks.md.
func summary(res *results) string {
	var d toolreport.Doc
	d.Heading(2, "Overload: cluster names past saturation")
	d.Para("From `%s` on %s (%s); the whole page, with the silent upstream and every figure, is [overload.md](overload.md). "+
		"Ours saturates at **%s q/s** on one core (the mix below, the upstream slow); each load is offered open-loop for %s from %d source addresses, "+
		"%s of it unique external names forwarded to the upstream.",
		res.Command, res.Finished.Format("2006-01-02"), res.Shape, toolreport.Thousands(res.Saturation), res.Duration, res.Clients, toolreport.Percent(res.External))
	d.Line("![cluster answers/s and p99 against offered load](overload.svg)")
	d.End()
	d.Table(goals(res))
	for _, up := range res.upstreams() {
		if up != upstreamSlow {
			continue
		}
		d.Para("With %s:", upstreamText(up))
		d.Table(table(res, up))
	}
	return d.String()
}

// page is docs/overload.md.
func page(res *results) string {
	var d toolreport.Doc
	d.Heading(1, "Overload")
	d.Para("Written by `%s` from %s to %s. %s", res.Command, res.Started.Format("2006-01-02 15:04"), res.Finished.Format("15:04 MST"), res.Note)
	d.Heading(2, "Targets")
	d.Table(goals(res))
	d.Line("![cluster answers/s and p99 against offered load](overload.svg)")
	d.End()
	for _, up := range res.upstreams() {
		d.Heading(2, "When %s", upstreamText(up))
		d.Table(table(res, up))
	}
	if len(res.Sockets) > 0 {
		d.Heading(2, "Every core: GOMAXPROCS and multisocket")
		d.Para("Ours (deploy/base's Corefile) at GOMAXPROCS 1 and 2, with one listening socket and with `multisocket`. " +
			"CPU per query is at half the one-core saturation; with two procs the server shares CPU 0 with the load, so its saturation is a floor.")
		t := toolreport.NewTable("GOMAXPROCS", "sockets", "CPUs", "saturation q/s", "CPU µs/query", "at q/s", "p99 ms", "answered").TextColumns(3)
		for _, s := range res.Sockets {
			t.Row(fmt.Sprint(s.Procs), fmt.Sprint(s.Sockets), s.CPUs, toolreport.Thousands(s.Saturation), fmt.Sprintf("%.1f", s.CPUPerQuery),
				toolreport.Thousands(s.Rate), fmt.Sprintf("%.2f", s.P99), toolreport.Percent(s.Answered))
		}
		d.Table(t)
	}
	d.Heading(2, "Method")
	d.List(method(res))
	d.Heading(2, "Machine")
	d.Table(res.Machine.Table())
	return d.String()
}

func method(res *results) []string {
	var servers []string
	for _, k := range res.servers() {
		servers = append(servers, fmt.Sprintf("`%s`: %s", k, res.Servers[k]))
	}
	steps := make([]string, 0, len(res.Calibration))
	for _, c := range res.Calibration {
		steps = append(steps, fmt.Sprintf("%s offered: %s answered a second", toolreport.Thousands(c.Rate), toolreport.Thousands(int(c.PerSecond))))
	}
	return []string{
		"Shape: " + res.Shape + ", in a real kube-apiserver and etcd on loopback.",
		"Servers: " + strings.Join(servers, "; ") + ". Each run starts its server afresh, waits for a cluster name's answer and warms it with " + res.Warmup + " at 2,000 q/s.",
		"Pinning: " + res.Pinning + ".",
		fmt.Sprintf("Load: open-loop (sent on schedule whatever comes back), from %d sockets on 127.0.1.1 and up, each a connected UDP socket sending in batches (sendmmsg); "+
			"cluster names cycle through every service's name (A); external names are x<counter>.overload.test. (A), unique so no cache answers them; "+
			"a query not answered within %s counts as no answer. Cluster answers/s count NOERROR and NXDOMAIN answers to cluster names; external ones NOERROR.", res.Clients, res.Timeout),
		fmt.Sprintf("Upstream: a stub on 127.0.0.2 that answers A 192.0.2.1 after %s, or never.", slowDelay),
		"Saturation: the most queries a second `ours-plain` answers (deploy/base without clusterfirst, whose shedding would end the ramp early), the upstream slow: a ramp of 3 s steps, up a quarter each step until the answers a second grow by less than 5%: " + strings.Join(steps, ", ") + ".",
		"Watch: RSS from /proc every 50 ms; go_goroutines from /metrics every 250 ms; /health and /ready asked every 200 ms each, as kubelet's probes would. " +
			"Recovery: from the last query sent, a cluster name asked every 10 ms from another address; recovered at the first of 3 answers in a row each within 20 ms.",
	}
}
