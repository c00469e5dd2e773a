package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// The targets each scenario is judged against.
const (
	targetRate        = 1000 // writes/s
	targetRelistRatio = 1.3  // ours' RSS peak over steady
	targetHostile     = 50000
)

func (res *results) churnOK() bool {
	c := res.Churn
	if c == nil {
		return false
	}
	return c.Check[keyOurs].wrong() == 0 && c.StaleAfter1s[keyOurs] == 0 && c.Check[keyOurs].Answers > 0
}

func (res *results) relistOK() bool {
	r := res.Relist
	if r == nil || r.Check == nil {
		return false
	}
	return r.ratio(keyOurs) <= targetRelistRatio && r.Check[keyOurs].wrong() == 0 && r.RecoveryFailed[keyOurs] == 0
}

func (f *faultResult) ok() bool {
	return f.Check[keyOurs].wrong() == 0 && f.Check[keyOurs].Answers > 0 && f.RecoveryFailed[keyOurs] == 0 &&
		f.Recovery != nil && f.gaugeTold()
}

// gaugeTold: the gauge fell to 0 during a fault that cuts the API server
// off, and was 1 again after every fault.
func (f *faultResult) gaugeTold() bool { return (f.GaugeDown >= 0 || !f.WantDown) && f.GaugeUp >= 0 }

func (h *hostileResult) ok() bool {
	return h.Crashes == 0 && h.ProbeFailures == 0 && h.Panics == 0 && h.Sent >= targetHostile
}

func (res *results) faultsOK() bool {
	return len(res.Faults) == len(faults) && !slices.ContainsFunc(res.Faults, func(f *faultResult) bool { return !f.ok() })
}

func (res *results) hostileOK() bool {
	return len(res.Hostile) > 0 && !slices.ContainsFunc(res.Hostile, func(h *hostileResult) bool { return !h.ok() })
}

func (res *results) slowOK() bool {
	s := res.Slow[keyOurs]
	return s != nil && s.During.Lost == 0 && s.HeldMean >= float64(s.Conns)*0.9
}

func (r *report) summary() {
	res := r.res
	r.p("## Summary (ours)")
	r.p("")
	all := res.churnOK() && res.Churn.Rate >= targetRate && res.relistOK() && res.faultsOK() && res.hostileOK() && res.slowOK()
	r.p("Every scenario passed: %s.", yesNo(all))
	r.p("")
	r.p("| scenario | criterion | result |")
	r.p("|---|---|---|")
	if c := res.Churn; c != nil {
		r.p("| churn | ≥ %d writes/s for ≥ 60 s | %s: %.0f writes/s for %.0f s |", targetRate, passFail(c.Rate >= targetRate && c.Seconds >= 60), c.Rate, c.Seconds)
		r.p("| churn | 0 wrong answers, 0 stale 1 s after the writers stop | %s: %d wrong of %d, %d stale |", passFail(res.churnOK()), c.Check[keyOurs].wrong(), c.Check[keyOurs].Answers, c.StaleAfter1s[keyOurs])
	}
	if rl := res.Relist; rl != nil {
		r.p("| forced relist | RSS peak ≤ %.1f× steady, answers right, changes seen | %s: %.2f× (stock %.2f×), %d wrong, %d changes unseen |", targetRelistRatio, passFail(res.relistOK()), rl.ratio(keyOurs), rl.ratio(keyStock), rl.Check[keyOurs].wrong(), rl.RecoveryFailed[keyOurs])
	}
	for _, f := range res.Faults {
		c := f.Check[keyOurs]
		gauge := "gauge 1 after"
		if f.WantDown {
			gauge = "gauge 0 during, 1 after"
		}
		r.p("| API server %s | last good answers, no SERVFAIL, %s, recovery without restart | %s: %d wrong (%d SERVFAIL) of %d, gauge to 0 after %s and 1 %s after the end, changes served %.1f s after the end |",
			f.Name, gauge, passFail(f.ok()), c.wrong(), c.ServFail, c.Answers, secs(f.GaugeDown), secs(f.GaugeUp), f.Recovery[keyOurs])
	}
	for _, h := range res.Hostile {
		r.p("| hostile input, %s | ≥ %d messages, 0 crashes, probe right after every batch | %s: %d messages, %d crashes, %d panics, %d probe failures, %.0f/s |", h.Port, targetHostile, passFail(h.ok()), h.Sent, h.Crashes, h.Panics, h.ProbeFailures, h.Rate)
	}
	if s := res.Slow[keyOurs]; s != nil {
		r.p("| slow TCP clients | %d held (on average ≥ 90%%), UDP still answered | %s: %.0f held on average (%d–%d), UDP p99 %.2f ms (%.2f ms before), %d lost |", s.Conns, passFail(res.slowOK()), s.HeldMean, s.HeldMin, s.HeldMax, s.During.P99, s.Before.P99, s.During.Lost)
	}
	r.p("")
	if c := res.Churn; c != nil && c.Rate < targetRate {
		// The churn's figure stays the real API server's; what the DNS
		// servers can take in is measured where the API server is no limit.
		r.p("This machine's API server cannot drive %d writes/s (why: under Churn), so the absorption target is proven in-process by `make absorb`, which feeds each DNS server from a fake API server of its own: see [absorption.md](absorption.md).", targetRate)
		r.p("")
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

func secs(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", s)
}

func (r *report) churn() {
	c := r.res.Churn
	if c == nil {
		return
	}
	r.p("## Churn")
	r.p("")
	r.p("%d client-go writers (protobuf, %d HTTP/2 connections) rewrite the services as fast as the API server accepts them for %.0f s: a headless service's EndpointSlice gets one address replaced, or (one write in %d) is deleted, and created again by its next write; a ClusterIP service gets a new port. Every state is registered before its request leaves.", c.Writers, c.Conns, c.Seconds, deleteEvery)
	r.p("A checker asks each server for every name over UDP (A for headless, SRV for ClusterIP), round robin at the check rate, and judges each answer: it must be a state written for that name (never a mix of two writes, never SERVFAIL), and not older than a state that server had already shown before the query left (so a deleted slice's records cannot come back once its deletion was seen). One second after the writers stop every name is asked once more and must show its last accepted write.")
	r.p("Programming latency: %d prober services, written one at a time by the tool itself, each write timed from its request leaving to the first answer of each server that shows it (asked every 2 ms), and from the API server's reply to that answer (0 when an answer showed the write sooner: the watch event can beat the reply); the reply itself took p50 %.1f ms, p99 %.1f ms.", probeServices, c.WriteRTT.P50, c.WriteRTT.P99)
	r.p("")
	r.p("Writes accepted: %d EndpointSlice writes (%d of them deletions) and %d Service updates, %.0f/s; %d failed.", c.SliceUpdates, c.Deletes, c.ServiceUpdates, c.Rate, c.Failed)
	r.p("")
	r.p("| | ours | stock |")
	r.p("|---|---|---|")
	row := func(name string, f func(string) string) { r.p("| %s | %s | %s |", name, f(keyOurs), f(keyStock)) }
	row("answers checked", func(k string) string { return fmt.Sprint(c.Check[k].Answers) })
	row("wrong answers (torn / older than seen)", func(k string) string {
		return fmt.Sprintf("%d (%d / %d)", c.Check[k].wrong(), c.Check[k].Torn, c.Check[k].Regress)
	})
	row("queries unanswered (timeouts)", func(k string) string { return fmt.Sprint(c.Check[k].Errors) })
	row("stale 1 s after the writers stopped", func(k string) string { return fmt.Sprint(c.StaleAfter1s[k]) })
	row("every name at its last write after", func(k string) string {
		return fmt.Sprintf("%.1f s (%d never)", c.SettleSeconds[k], c.NeverSettled[k])
	})
	row("programming latency from the write request, p50 / p99 / max", func(k string) string {
		q := c.Latency[k]
		return fmt.Sprintf("%.1f / %.1f / %.1f ms (%d writes, %d timed out)", q.P50, q.P99, q.Max, q.N, q.TimedOut)
	})
	row("programming latency from the API server's reply, p50 / p99 / max", func(k string) string {
		q := c.LatencyAfterReply[k]
		return fmt.Sprintf("%.1f / %.1f / %.1f ms", q.P50, q.P99, q.Max)
	})
	row("RSS before → peak during the churn", func(k string) string { return mib(c.SteadyRSS[k]) + " → " + mib(c.PeakRSS[k]) })
	r.examples(c.Check)
	r.p("")
	r.cpu(c)
}

// cpu says where the machine's CPU time went while the writers ran: the
// write rate is bounded by the API server's share of two cores.
func (r *report) cpu(c *churnResult) {
	if len(c.CPU) == 0 {
		return
	}
	capacity := c.Seconds * float64(runtime.NumCPU())
	var names []string
	listed := 0.0
	for k, v := range c.CPU {
		if k != machineKey {
			names = append(names, k)
			listed += v
		}
	}
	slices.Sort(names)
	r.p("Where the CPU went while the writers ran (%.0f s × %d CPUs = %.0f CPU-seconds):", c.Seconds, runtime.NumCPU(), capacity)
	r.p("")
	r.p("| process | CPU-seconds | share of the machine | per 1,000 writes |")
	r.p("|---|---|---|---|")
	writes := c.Rate * c.Seconds / 1000
	for _, k := range names {
		r.p("| %s | %.1f | %.0f%% | %.2f s |", k, c.CPU[k], 100*c.CPU[k]/capacity, c.CPU[k]/writes)
	}
	if busy, ok := c.CPU[machineKey]; ok {
		// The machine's counters and the processes' are read at slightly
		// different moments and ticks: a small negative rest is noise.
		rest := max(busy-listed, 0)
		r.p("| everything else on the machine (other sessions, the kernel) | %.1f | %.0f%% | |", rest, 100*rest/capacity)
		r.p("| idle | %.1f | %.0f%% | |", capacity-busy, 100*(capacity-busy)/capacity)
	}
	r.p("")
	api := (c.CPU["kube-apiserver"] + c.CPU["etcd"]) / writes // CPU-seconds per 1,000 writes
	if c.Rate < targetRate && api > 0 {
		r.p("Why not %d writes/s: the API server and etcd together spent %.1f CPU-ms per write, so %d writes/s would take %.1f CPUs for those two alone, on a machine of %d that also runs both DNS servers, the writers and the checker.", targetRate, api, targetRate, api*targetRate/1000, runtime.NumCPU())
		r.p("")
	}
}

// examples lists the first wrong answers of each server, if any.
func (r *report) examples(by map[string]checkCount) {
	for _, k := range []string{keyOurs, keyStock} {
		if ex := by[k].Examples; len(ex) > 0 {
			r.p("")
			r.p("First wrong answers of %s: %s.", k, strings.Join(ex, "; "))
		}
	}
}

func (r *report) quiet() {
	q := r.res.Quiet
	if q == nil {
		return
	}
	r.p("## Updates that change nothing DNS reads")
	r.p("")
	r.p("For %.0f s, %d writers set a new annotation (a merge patch) on each headless service's EndpointSlice and each ClusterIP Service in turn, as fast as the API server accepts, with no checker running: %d slice and %d Service updates, %d failed (slices the churn left deleted). Nothing DNS reads changes, so no answer and no SOA serial may change.", q.Seconds, q.Writers, q.SliceUpdates, q.ServiceUpdates, q.Failed)
	r.p("")
	r.p("| | ours | stock |")
	r.p("|---|---|---|")
	updates := float64(q.SliceUpdates + q.ServiceUpdates)
	perUpdate := func(k string) string {
		if updates == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f", q.CPU[k]/updates*1e6)
	}
	r.p("| updates skipped (`coredns_watchcache_updates_skipped_total`): EndpointSlices, Services | %.0f of %d, %.0f of %d | no such counter |", q.Skipped["endpointslices"], q.SliceUpdates, q.Skipped["services"], q.ServiceUpdates)
	r.p("| server CPU µs per update (utime+stime from the first write to a second after the last) | %s | %s |", perUpdate(keyOurs), perUpdate(keyStock))
	r.p("| SOA serial of cluster.local before → after | %d → %d | %d → %d |", q.SerialBefore[keyOurs], q.SerialAfter[keyOurs], q.SerialBefore[keyStock], q.SerialAfter[keyStock])
	r.p("")
}

func (r *report) relist() {
	rl := r.res.Relist
	if rl == nil {
		return
	}
	r.p("## Forced relist")
	r.p("")
	r.p("The API server is killed, etcd is compacted to its current revision (%d) through its v3 HTTP gateway (`/v3/kv/compaction`), and the API server is started again (down %.1f s): every watch's resource version is gone, so every informer gets 410 Gone and lists again. The checker asks for every name throughout and every answer must be the last write. After the restart %d services are written and must be served. Peak RSS is VmHWM, reset just before the outage.", rl.Revision, rl.DownSeconds, recoveryNames)
	r.p("")
	r.p("| | ours | stock |")
	r.p("|---|---|---|")
	row := func(name string, f func(string) string) { r.p("| %s | %s | %s |", name, f(keyOurs), f(keyStock)) }
	row("RSS steady → peak", func(k string) string {
		return fmt.Sprintf("%s → %s (%.2f×)", mib(rl.SteadyRSS[k]), mib(rl.PeakRSS[k]), rl.ratio(k))
	})
	row("answers checked / wrong / SERVFAIL / unanswered", func(k string) string {
		c := rl.Check[k]
		return fmt.Sprintf("%d / %d / %d / %d", c.Answers, c.wrong(), c.ServFail, c.Errors)
	})
	row("changes after the restart served within", func(k string) string {
		return fmt.Sprintf("%.1f s (%d never)", rl.Recovery[k], rl.RecoveryFailed[k])
	})
	r.p("")
	r.p("Ours counted %.0f relists (`coredns_watchcache_relists_total`), all within %.1f s of the restart.", rl.Relists, rl.RelistWaitSeconds)
	r.examples(rl.Check)
	r.p("")
}

func (r *report) faults() {
	if len(r.res.Faults) == 0 {
		return
	}
	r.p("## API server faults")
	r.p("")
	r.p("Readiness is meant to stay ready through all three: the servers keep answering from the last good state, and a failed readiness probe during an API server outage would take every replica out of the Service at once. The connection gauge is what says the API server is out of reach (ours probes /readyz every 10 s on the watches' connection, so a stall shows too).")
	r.p("")
	r.p("Each fault lasts the outage's length under the checker's load (every name, every answer must be the last good state: no SERVFAIL, no NXDOMAIN for a name that exists). Readiness (`ready` plugin, /ready) and ours' connection gauge (`coredns_watchcache_api_reachable`, lowest over the resources) are sampled every 250 ms. When the fault ends, %d services are written and must be served, without any restart of the DNS servers.", recoveryNames)
	r.p("")
	r.p("| fault | server | answers / wrong / SERVFAIL / unanswered | ready samples before, during, after | gauge (lowest) before, during, after | changes served after the end |")
	r.p("|---|---|---|---|---|---|")
	for _, f := range r.res.Faults {
		for _, k := range []string{keyOurs, keyStock} {
			c := f.Check[k]
			gauge := "(none)"
			if k == keyOurs {
				gauge = fmt.Sprintf("%g, %g, %g (0 after %s, 1 again %s after the end)", f.Gauge[phaseBefore], f.Gauge[phaseDuring], f.Gauge[phaseAfter], secs(f.GaugeDown), secs(f.GaugeUp))
			}
			rd := f.Ready[k]
			r.p("| %s: %s%s | %s | %d / %d / %d / %d | %s, %s, %s | %s | %.1f s (%d never) |", f.Name, f.What, noteOf(f.Note), k, c.Answers, c.wrong(), c.ServFail, c.Errors,
				rd[phaseBefore], rd[phaseDuring], rd[phaseAfter], gauge, f.Recovery[k], f.RecoveryFailed[k])
		}
	}
	r.p("")
	for _, f := range r.res.Faults {
		r.p("- %s: ours counted %.0f failed list or watch calls (`coredns_watchcache_errors_total`) and %.0f relists.", f.Name, f.Errors, f.Relists)
	}
	for _, f := range r.res.Faults {
		r.examples(f.Check)
	}
	r.p("")
}

func noteOf(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func (r *report) hostile() {
	if len(r.res.Hostile) == 0 {
		return
	}
	r.p("## Hostile network input")
	r.p("")
	r.p("A client built on miekg/dns sends mutated and malformed messages to every server port, in batches of %d; after each batch the port's liveness probe (a ClusterIP service's A record; through edns0autopath's derived search path on its port) must answer right over UDP and TCP. Three in ten messages go over TCP, several to a connection with their length prefixes; one connection in four ends with a lying prefix (longer than what follows, shorter, or zero); three slow writers per batch send a query a byte every 20 ms and leave. A crash is the process exiting; panics are those CoreDNS recovered and logged.", hostileBatch)
	r.p("")
	r.p("| port | messages (UDP / TCP on connections) | replies read | crashes | panics | batches with a failed probe | rate |")
	r.p("|---|---|---|---|---|---|---|")
	kinds := map[string]int{}
	for _, h := range r.res.Hostile {
		r.p("| %s | %d (%d / %d on %d) | %d | %d | %d | %d of %d | %.0f messages/s |", h.Port, h.Sent, h.UDP, h.TCP, h.TCPConns, h.Replies, h.Crashes, h.Panics, h.ProbeFailures, h.Batches, h.Rate)
		for k, n := range h.Kinds {
			kinds[k] += n
		}
		if h.FirstFailure != "" {
			r.p("")
			r.p("First failure on %s: %s", h.Port, h.FirstFailure)
		}
	}
	r.p("")
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	r.p("Messages by kind, all ports: %s.", strings.Join(parts, ", "))
	r.p("")
}

func (r *report) slow() {
	if len(r.res.Slow) == 0 {
		return
	}
	r.p("## Slow TCP clients")
	r.p("")
	r.p("Against each server in turn: TCP connections held open, half idle and half writing a query a byte a second; a connection the server closes (CoreDNS's TCP read timeout) is opened again at once. A UDP client asks a ClusterIP service's A record %d times a second for %s before the connections and again while they are held.", slowQPS, slowPhase)
	r.p("")
	r.p("| server | connections | held at once: mean (min–max) | reopened after the server closed them | UDP p50 / p99 / max before | while held | UDP lost while held |")
	r.p("|---|---|---|---|---|---|---|")
	for _, k := range []string{keyOurs, keyStock} {
		s := r.res.Slow[k]
		if s == nil {
			continue
		}
		r.p("| %s | %d | %.0f (%d–%d) | %d | %.2f / %.2f / %.2f ms | %.2f / %.2f / %.2f ms | %d |", k, s.Conns, s.HeldMean, s.HeldMin, s.HeldMax, s.Reopened,
			s.Before.P50, s.Before.P99, s.Before.Max, s.During.P50, s.During.P99, s.During.Max, s.During.Lost)
	}
	r.p("")
}
