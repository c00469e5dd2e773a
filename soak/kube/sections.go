package kube

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/internal/toolreport"
	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/report"
	"github.com/schemadns/schemadns/soak/tracked"
)

// The targets each scenario is judged against.
const (
	targetRate        = 1000 // writes/s
	targetRelistRatio = 1.3  // ours' RSS peak over steady
	targetHostile     = 50000
)

func (res *Results) churnOK() bool {
	c := res.Churn
	if c == nil {
		return false
	}
	return c.Check[KeyOurs].Wrong() == 0 && c.StaleAfter1s[KeyOurs] == 0 && c.Check[KeyOurs].Answers > 0
}

func (res *Results) relistOK() bool {
	r := res.Relist
	if r == nil || r.Check == nil {
		return false
	}
	return r.ratio(KeyOurs) <= targetRelistRatio && r.Check[KeyOurs].Wrong() == 0 && r.RecoveryFailed[KeyOurs] == 0
}

func (f *FaultResult) ok() bool {
	return f.Check[KeyOurs].Wrong() == 0 && f.Check[KeyOurs].Answers > 0 && f.RecoveryFailed[KeyOurs] == 0 &&
		f.Recovery != nil && f.gaugeTold()
}

// gaugeTold: the gauge fell to 0 during a fault that cuts the API server
// off, and was 1 again after every fault.
func (f *FaultResult) gaugeTold() bool { return (f.GaugeDown >= 0 || !f.WantDown) && f.GaugeUp >= 0 }

func (h *HostileResult) ok() bool {
	return h.Crashes == 0 && h.ProbeFailures == 0 && h.Panics == 0 && h.Sent >= targetHostile
}

func (res *Results) faultsOK() bool {
	return len(res.Faults) == len(faults) && !slices.ContainsFunc(res.Faults, func(f *FaultResult) bool { return !f.ok() })
}

func (res *Results) hostileOK() bool {
	return len(res.Hostile) > 0 && !slices.ContainsFunc(res.Hostile, func(h *HostileResult) bool { return !h.ok() })
}

func (res *Results) slowOK() bool {
	s := res.Slow[KeyOurs]
	return s != nil && s.During.Lost == 0 && s.HeldMean >= float64(s.Conns)*0.9
}

func (r *page) summary() {
	res := r.res
	r.Heading(2, "Summary (ours)")
	all := res.churnOK() && res.Churn.Rate >= targetRate && res.relistOK() && res.faultsOK() && res.hostileOK() && res.slowOK()
	r.Para("Every scenario passed: %s.", report.YesNo(all))
	t := report.Table("scenario", "criterion", "result")
	if c := res.Churn; c != nil {
		t.Row("churn", fmt.Sprintf("≥ %d writes/s for ≥ 60 s", targetRate),
			fmt.Sprintf("%s: %.0f writes/s for %.0f s", report.PassFail(c.Rate >= targetRate && c.Seconds >= 60), c.Rate, c.Seconds))
		t.Row("churn", "0 wrong answers, 0 stale 1 s after the writers stop", fmt.Sprintf("%s: %d wrong of %d, %d stale",
			report.PassFail(res.churnOK()), c.Check[KeyOurs].Wrong(), c.Check[KeyOurs].Answers, c.StaleAfter1s[KeyOurs]))
	}
	if rl := res.Relist; rl != nil {
		t.Row("forced relist", fmt.Sprintf("RSS peak ≤ %.1f× steady, answers right, changes seen", targetRelistRatio),
			fmt.Sprintf("%s: %.2f× (stock %.2f×), %d wrong, %d changes unseen", report.PassFail(res.relistOK()),
				rl.ratio(KeyOurs), rl.ratio(KeyStock), rl.Check[KeyOurs].Wrong(), rl.RecoveryFailed[KeyOurs]))
	}
	for _, f := range res.Faults {
		c := f.Check[KeyOurs]
		gauge := "gauge 1 after"
		if f.WantDown {
			gauge = "gauge 0 during, 1 after"
		}
		t.Row("API server "+f.Name, fmt.Sprintf("last good answers, no SERVFAIL, %s, recovery without restart", gauge),
			fmt.Sprintf("%s: %d wrong (%d SERVFAIL) of %d, gauge to 0 after %s and 1 %s after the end, "+
				"changes served %.1f s after the end", report.PassFail(f.ok()), c.Wrong(), c.ServFail, c.Answers,
				report.Secs(f.GaugeDown), report.Secs(f.GaugeUp), f.Recovery[KeyOurs]))
	}
	for _, h := range res.Hostile {
		t.Row("hostile input, "+h.Port, fmt.Sprintf("≥ %d messages, 0 crashes, probe right after every batch", targetHostile),
			fmt.Sprintf("%s: %d messages, %d crashes, %d panics, %d probe failures, %.0f/s",
				report.PassFail(h.ok()), h.Sent, h.Crashes, h.Panics, h.ProbeFailures, h.Rate))
	}
	if s := res.Slow[KeyOurs]; s != nil {
		t.Row("slow TCP clients", fmt.Sprintf("%d held (on average ≥ 90%%), UDP still answered", s.Conns),
			fmt.Sprintf("%s: %.0f held on average (%d–%d), UDP p99 %.2f ms (%.2f ms before), %d lost",
				report.PassFail(res.slowOK()), s.HeldMean, s.HeldMin, s.HeldMax, s.During.P99, s.Before.P99, s.During.Lost))
	}
	r.Table(t)
	if c := res.Churn; c != nil && c.Rate < targetRate {
		// The churn's figure stays the real API server's; what the DNS
		// servers can take in is measured where the API server is no limit.
		r.Para("This machine's API server cannot drive %d writes/s (why: under Churn), so the absorption target is "+
			"proven in-process by `make absorb`, which feeds each DNS server from a fake API server of its own: "+
			"see [absorption.md](absorption.md).", targetRate)
	}
}

// oursStock is a table of rows that each give a figure of ours and of
// stock.
type oursStock struct{ *toolreport.Table }

func newOursStock() oursStock { return oursStock{report.Table("", "ours", "stock")} }

// row adds the figure f gives for each server.
func (t oursStock) row(name string, f func(key string) string) { t.Row(name, f(KeyOurs), f(KeyStock)) }

func (r *page) churn() {
	c := r.res.Churn
	if c == nil {
		return
	}
	r.Heading(2, "Churn")
	r.Line("%d client-go writers (protobuf, %d HTTP/2 connections) rewrite the services as fast as the API server "+
		"accepts them for %.0f s: a headless service's EndpointSlice gets one address replaced, or (one write in "+
		"%d) is deleted, and created again by its next write; a ClusterIP service gets a new port. Every state is "+
		"registered before its request leaves.", c.Writers, c.Conns, c.Seconds, tracked.DeleteEvery)
	r.Line("A checker asks each server for every name over UDP (A for headless, SRV for ClusterIP), round robin " +
		"at the check rate, and judges each answer: it must be a state written for that name (never a mix of two " +
		"writes, never SERVFAIL), and not older than a state that server had already shown before the query left " +
		"(so a deleted slice's records cannot come back once its deletion was seen). One second after the " +
		"writers stop every name is asked once more and must show its last accepted write.")
	r.Line("Programming latency: %d prober services, written one at a time by the tool itself, each write timed "+
		"from its request leaving to the first answer of each server that shows it (asked every 2 ms), and from "+
		"the API server's reply to that answer (0 when an answer showed the write sooner: the watch event can "+
		"beat the reply); the reply itself took p50 %.1f ms, p99 %.1f ms.", probeServices, c.WriteRTT.P50, c.WriteRTT.P99)
	r.End()
	r.Para("Writes accepted: %d EndpointSlice writes (%d of them deletions) and %d Service updates, %.0f/s; %d failed.",
		c.SliceUpdates, c.Deletes, c.ServiceUpdates, c.Rate, c.Failed)
	t := newOursStock()
	t.row("answers checked", func(k string) string { return fmt.Sprint(c.Check[k].Answers) })
	t.row("wrong answers (torn / older than seen)", func(k string) string {
		return fmt.Sprintf("%d (%d / %d)", c.Check[k].Wrong(), c.Check[k].Torn, c.Check[k].Regress)
	})
	t.row("queries unanswered (timeouts)", func(k string) string { return fmt.Sprint(c.Check[k].Errors) })
	t.row("stale 1 s after the writers stopped", func(k string) string { return fmt.Sprint(c.StaleAfter1s[k]) })
	t.row("every name at its last write after", func(k string) string {
		return fmt.Sprintf("%.1f s (%d never)", c.SettleSeconds[k], c.NeverSettled[k])
	})
	t.row("programming latency from the write request, p50 / p99 / max", func(k string) string {
		q := c.Latency[k]
		return fmt.Sprintf("%.1f / %.1f / %.1f ms (%d writes, %d timed out)", q.P50, q.P99, q.Max, q.N, q.TimedOut)
	})
	t.row("programming latency from the API server's reply, p50 / p99 / max", func(k string) string {
		q := c.LatencyAfterReply[k]
		return fmt.Sprintf("%.1f / %.1f / %.1f ms", q.P50, q.P99, q.Max)
	})
	t.row("RSS before → peak during the churn", func(k string) string { return report.MiB(c.SteadyRSS[k]) + " → " + report.MiB(c.PeakRSS[k]) })
	r.Table(t.Table)
	r.examples(c.Check)
	r.cpu(c)
}

// cpu says where the machine's CPU time went while the writers ran: the
// write rate is bounded by the API server's share of two cores.
func (r *page) cpu(c *ChurnResult) {
	if len(c.CPU) == 0 {
		return
	}
	cpus := r.res.Machine.CPUs
	capacity := c.Seconds * float64(cpus)
	var names []string
	listed := 0.0
	for k, v := range c.CPU {
		if k != machineKey {
			names = append(names, k)
			listed += v
		}
	}
	slices.Sort(names)
	r.Para("Where the CPU went while the writers ran (%.0f s × %d CPUs = %.0f CPU-seconds):", c.Seconds, cpus, capacity)
	t := report.Table("process", "CPU-seconds", "share of the machine", "per 1,000 writes")
	writes := c.Rate * c.Seconds / 1000
	for _, k := range names {
		t.Row(k, fmt.Sprintf("%.1f", c.CPU[k]), toolreport.Percent(c.CPU[k]/capacity), fmt.Sprintf("%.2f s", c.CPU[k]/writes))
	}
	if busy, ok := c.CPU[machineKey]; ok {
		// The machine's counters and the processes' are read at slightly
		// different moments and ticks: a small negative rest is noise.
		rest := max(busy-listed, 0)
		t.Row("everything else on the machine (other sessions, the kernel)", fmt.Sprintf("%.1f", rest),
			toolreport.Percent(rest/capacity), "")
		t.Row("idle", fmt.Sprintf("%.1f", capacity-busy), toolreport.Percent((capacity-busy)/capacity), "")
	}
	r.Table(t)
	api := (c.CPU["kube-apiserver"] + c.CPU["etcd"]) / writes // CPU-seconds per 1,000 writes
	if c.Rate < targetRate && api > 0 {
		r.Para("Why not %d writes/s: the API server and etcd together spent %.1f CPU-ms per write, so %d writes/s "+
			"would take %.1f CPUs for those two alone, on a machine of %d that also runs both DNS servers, the "+
			"writers and the checker.", targetRate, api, targetRate, api*targetRate/1000, cpus)
	}
}

// examples lists the first wrong answers of each server, if any.
func (r *page) examples(by map[string]observe.Count) {
	for _, k := range []string{KeyOurs, KeyStock} {
		if ex := by[k].Examples; len(ex) > 0 {
			r.Para("First wrong answers of %s: %s.", k, strings.Join(ex, "; "))
		}
	}
}

func (r *page) quiet() {
	q := r.res.Quiet
	if q == nil {
		return
	}
	r.Heading(2, "Updates that change nothing DNS reads")
	r.Para("For %.0f s, %d writers set a new annotation (a merge patch) on each headless service's EndpointSlice "+
		"and each ClusterIP Service in turn, as fast as the API server accepts, with no checker running: %d slice "+
		"and %d Service updates, %d failed (slices the churn left deleted). Nothing DNS reads changes, so no "+
		"answer and no SOA serial may change.", q.Seconds, q.Writers, q.SliceUpdates, q.ServiceUpdates, q.Failed)
	updates := float64(q.SliceUpdates + q.ServiceUpdates)
	perUpdate := func(k string) string {
		if updates == 0 {
			return toolreport.Dash
		}
		return fmt.Sprintf("%.0f", q.CPU[k]/updates*1e6)
	}
	t := newOursStock()
	t.Row("updates skipped (`coredns_watchcache_updates_skipped_total`): EndpointSlices, Services",
		fmt.Sprintf("%.0f of %d, %.0f of %d", q.Skipped["endpointslices"], q.SliceUpdates, q.Skipped["services"], q.ServiceUpdates),
		"no such counter")
	t.row("server CPU µs per update (utime+stime from the first write to a second after the last)", perUpdate)
	t.row("SOA serial of cluster.local before → after", func(k string) string {
		return fmt.Sprintf("%d → %d", q.SerialBefore[k], q.SerialAfter[k])
	})
	r.Table(t.Table)
}

func (r *page) relist() {
	rl := r.res.Relist
	if rl == nil {
		return
	}
	r.Heading(2, "Forced relist")
	r.Para("The API server is killed, etcd is compacted to its current revision (%d) through its v3 HTTP gateway "+
		"(`/v3/kv/compaction`), and the API server is started again (down %.1f s): every watch's resource "+
		"version is gone, so every informer gets 410 Gone and lists again. The checker asks for every name "+
		"throughout and every answer must be the last write. After the restart %d services are written and "+
		"must be served. Peak RSS is VmHWM, reset just before the outage.", rl.Revision, rl.DownSeconds, recoveryNames)
	t := newOursStock()
	t.row("RSS steady → peak", func(k string) string {
		return fmt.Sprintf("%s → %s (%.2f×)", report.MiB(rl.SteadyRSS[k]), report.MiB(rl.PeakRSS[k]), rl.ratio(k))
	})
	t.row("answers checked / wrong / SERVFAIL / unanswered", func(k string) string {
		c := rl.Check[k]
		return fmt.Sprintf("%d / %d / %d / %d", c.Answers, c.Wrong(), c.ServFail, c.Errors)
	})
	t.row("changes after the restart served within", func(k string) string {
		return fmt.Sprintf("%.1f s (%d never)", rl.Recovery[k], rl.RecoveryFailed[k])
	})
	r.Table(t.Table)
	r.Para("Ours counted %.0f relists (`coredns_watchcache_relists_total`), all within %.1f s of the restart.",
		rl.Relists, rl.RelistWaitSeconds)
	r.examples(rl.Check)
}

func (r *page) faults() {
	if len(r.res.Faults) == 0 {
		return
	}
	r.Heading(2, "API server faults")
	r.Para("Readiness is meant to stay ready through all three: the servers keep answering from the last good " +
		"state, and a failed readiness probe during an API server outage would take every replica out of the " +
		"Service at once. The connection gauge is what says the API server is out of reach (ours probes /readyz " +
		"every 10 s on the watches' connection, so a stall shows too).")
	r.Para("Each fault lasts the outage's length under the checker's load (every name, every answer must be the "+
		"last good state: no SERVFAIL, no NXDOMAIN for a name that exists). Readiness (`ready` plugin, /ready) "+
		"and ours' connection gauge (`coredns_watchcache_api_reachable`, lowest over the resources) are sampled "+
		"every 250 ms. When the fault ends, %d services are written and must be served, without any restart of "+
		"the DNS servers.", recoveryNames)
	t := report.Table("fault", "server", "answers / wrong / SERVFAIL / unanswered", "ready samples before, during, after",
		"gauge (lowest) before, during, after", "changes served after the end")
	for _, f := range r.res.Faults {
		for _, k := range []string{KeyOurs, KeyStock} {
			c := f.Check[k]
			gauge := "(none)"
			if k == KeyOurs {
				gauge = fmt.Sprintf("%g, %g, %g (0 after %s, 1 again %s after the end)",
					f.Gauge[observe.PhaseBefore], f.Gauge[observe.PhaseDuring], f.Gauge[observe.PhaseAfter], report.Secs(f.GaugeDown), report.Secs(f.GaugeUp))
			}
			rd := f.Ready[k]
			t.Row(f.Name+": "+f.What+noteOf(f.Note), k, fmt.Sprintf("%d / %d / %d / %d", c.Answers, c.Wrong(), c.ServFail, c.Errors),
				rd[observe.PhaseBefore]+", "+rd[observe.PhaseDuring]+", "+rd[observe.PhaseAfter], gauge,
				fmt.Sprintf("%.1f s (%d never)", f.Recovery[k], f.RecoveryFailed[k]))
		}
	}
	r.Table(t)
	for _, f := range r.res.Faults {
		r.Line("- %s: ours counted %.0f failed list or watch calls (`coredns_watchcache_errors_total`) and %.0f relists.",
			f.Name, f.Errors, f.Relists)
	}
	r.End()
	for _, f := range r.res.Faults {
		r.examples(f.Check)
	}
}

func noteOf(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func (r *page) hostile() {
	if len(r.res.Hostile) == 0 {
		return
	}
	r.Heading(2, "Hostile network input")
	r.Para("A client built on miekg/dns sends mutated and malformed messages to every server port, in batches of "+
		"%d; after each batch the port's liveness probe (a ClusterIP service's A record; through edns0autopath's "+
		"derived search path on its port) must answer right over UDP and TCP. Three in ten messages go over TCP, "+
		"several to a connection with their length prefixes; one connection in four ends with a lying prefix "+
		"(longer than what follows, shorter, or zero); three slow writers per batch send a query a byte every "+
		"20 ms and leave. A crash is the process exiting; panics are those CoreDNS recovered and logged.", hostileBatch)
	t := report.Table("port", "messages (UDP / TCP on connections)", "replies read", "crashes", "panics",
		"batches with a failed probe", "rate")
	kinds := map[string]int{}
	var failures []string
	for _, h := range r.res.Hostile {
		t.Row(h.Port, fmt.Sprintf("%d (%d / %d on %d)", h.Sent, h.UDP, h.TCP, h.TCPConns), fmt.Sprint(h.Replies),
			fmt.Sprint(h.Crashes), fmt.Sprint(h.Panics), fmt.Sprintf("%d of %d", h.ProbeFailures, h.Batches),
			fmt.Sprintf("%.0f messages/s", h.Rate))
		for k, n := range h.Kinds {
			kinds[k] += n
		}
		if h.FirstFailure != "" {
			failures = append(failures, fmt.Sprintf("First failure on %s: %s", h.Port, h.FirstFailure))
		}
	}
	r.Table(t)
	for _, f := range failures {
		r.Para("%s", f)
	}
	r.Para("Messages by kind, all ports: %s.", toolreport.Pairs(kinds, "%s %d"))
}

func (r *page) slow() {
	if len(r.res.Slow) == 0 {
		return
	}
	r.Heading(2, "Slow TCP clients")
	r.Para("Against each server in turn: TCP connections held open, half idle and half writing a query a byte a "+
		"second; a connection the server closes (CoreDNS's TCP read timeout) is opened again at once. A UDP "+
		"client asks a ClusterIP service's A record %d times a second for %s before the connections and again "+
		"while they are held.", slowQPS, slowPhase)
	t := report.Table("server", "connections", "held at once: mean (min–max)", "reopened after the server closed them",
		"UDP p50 / p99 / max before", "while held", "UDP lost while held")
	for _, k := range []string{KeyOurs, KeyStock} {
		s := r.res.Slow[k]
		if s == nil {
			continue
		}
		t.Row(k, fmt.Sprint(s.Conns), fmt.Sprintf("%.0f (%d–%d)", s.HeldMean, s.HeldMin, s.HeldMax), fmt.Sprint(s.Reopened),
			fmt.Sprintf("%.2f / %.2f / %.2f ms", s.Before.P50, s.Before.P99, s.Before.Max),
			fmt.Sprintf("%.2f / %.2f / %.2f ms", s.During.P50, s.During.P99, s.During.Max), fmt.Sprint(s.During.Lost))
	}
	r.Table(t)
}
