package mesos

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/report"
)

// Result is one Mesos scenario's outcome.
type Result struct {
	Name, Title string
	Stanza      string   // the masters' part of the mesosschema stanza
	Steps       []string // the fault, as done
	// WindowSeconds is the staleness allowed: a state replaced less than
	// this before a query may still answer it.
	WindowSeconds float64
	States        int // good states served in all
	Check         observe.Count
	Phases        map[string]phaseCount
	// Ready is the ready plugin's samples by server and phase; Gauge the
	// lowest master_reachable by phase, GaugeDown and GaugeUp when it read
	// 0 after the fault began and 1 after it ended (-1 never).
	Ready              map[string]map[string]string
	Gauge, GaugeLast   map[string]float64 // GaugeLast: the phase's last sample
	GaugeDown, GaugeUp float64
	WantDown           bool // the fault leaves no master giving a good state
	// Names is the lowest and highest coredns_mesosschema_names by phase;
	// Serial the SOA serial as the fault began and as it ended.
	Names                  map[string][2]float64
	SerialStart, SerialEnd uint32
	Polls                  map[string]pollPhase
	// Logs counts the log lines by kind (logPatterns) from the
	// fault's start, LogsBefore before it (start-up included); LogLines
	// are the plugin's lines.
	Logs, LogsBefore map[string]int
	LogLines         []string
	// ServeSeconds is from the state that ended the fault becoming visible
	// to the first answer showing it (-1 never); ServeWhat that state.
	ServeWhat    string
	ServeSeconds float64
	// LeaderBefore and LeaderAfter lead before and after the fault;
	// LeaderServed is what leader.mesos answered at the end.
	LeaderBefore, LeaderAfter, LeaderServed string
	// Changes is the time to serve each state, from its being visible;
	// FaultChanges of those made visible during the fault, FaultUnseen
	// how many of those were never shown.
	Changes, FaultChanges observe.Quantiles
	FaultUnseen           int
	Held                  float64 // polls held back (no agent listed)
	Panics                int
	Criteria              []criterion
}

// criterion is one promise of the plugin and how the scenario found it.
type criterion struct {
	What, Result string
	OK           bool
}

func (r *Result) ok() bool {
	return len(r.Criteria) > 0 && !slices.ContainsFunc(r.Criteria, func(c criterion) bool { return !c.OK })
}

// commonCriteria are the promises every fault is held to: no wrong answer,
// no SERVFAIL, the last good state served throughout the fault and the zone
// left as it was, the gauge and the log telling the outage (WantDown) or
// nothing, the state after the fault served within the staleness allowed,
// no panic.
func (e *env) commonCriteria() []criterion {
	r := e.res
	during := r.Phases[observe.PhaseDuring]
	out := []criterion{e.noWrong(),
		{"every answer during the fault from the last good state", fmt.Sprintf("%d of %d", during.FromPinned, during.Answers),
			during.Answers > 0 && during.FromPinned == during.Answers},
		e.zoneKept(), e.noEarlyOutage(),
	}
	logs := fmt.Sprintf("%d on, %d off", r.Logs["outage"], r.Logs["recovery"])
	gauge := fmt.Sprintf("lowest %g during (0 after %s), 1 again %s after the end", r.Gauge[observe.PhaseDuring], report.Secs(r.GaugeDown), report.Secs(r.GaugeUp))
	if r.WantDown {
		out = append(out,
			criterion{"master_reachable 0 during, 1 after", gauge, r.GaugeDown >= 0 && r.GaugeUp >= 0},
			criterion{"the outage logged once, its end once", logs, r.Logs["outage"] == 1 && r.Logs["recovery"] == 1})
	} else {
		out = append(out, e.reachable(), criterion{"no outage logged", logs, r.Logs["outage"] == 0})
	}
	return append(out, e.servedAfter(), e.noPanic())
}

// noWrong: every answer right, none SERVFAIL.
func (e *env) noWrong() criterion {
	c := e.res.Check
	return criterion{"no wrong answer, no SERVFAIL", fmt.Sprintf("%d wrong (%d SERVFAIL, %d empty, %d older than allowed, %d older than shown, %d of no state) of %d; %d unanswered",
		c.Wrong(), c.ServFail, c.Empty, c.Behind, c.Regress, c.Torn-c.Empty-c.ServFail, c.Answers, c.Errors), c.Wrong() == 0 && c.Answers > 0}
}

// noEarlyOutage: nothing went wrong before the fault, start-up included.
func (e *env) noEarlyOutage() criterion {
	b := e.res.LogsBefore
	return criterion{"no outage logged before the fault (start-up included)", fmt.Sprintf("%d on, %d off", b["outage"], b["recovery"]), b["outage"] == 0}
}

// reachable: the gauge read 1 throughout the fault and after.
func (e *env) reachable() criterion {
	r := e.res
	return criterion{"master_reachable 1 throughout", fmt.Sprintf("lowest %g during, %g after", r.Gauge[observe.PhaseDuring], r.Gauge[observe.PhaseAfter]),
		r.Gauge[observe.PhaseDuring] == 1 && r.Gauge[observe.PhaseAfter] == 1}
}

// servedAfter: the state that ended the fault was served within the
// staleness allowed.
func (e *env) servedAfter() criterion {
	r := e.res
	return criterion{"the state after the fault served within the staleness allowed", fmt.Sprintf("%s after it was (%.1f s allowed)", report.Secs(r.ServeSeconds), r.WindowSeconds),
		r.ServeSeconds >= 0 && r.ServeSeconds <= r.WindowSeconds}
}

func (e *env) noPanic() criterion {
	return criterion{"no panic", fmt.Sprint(e.res.Panics), e.res.Panics == 0}
}

// zoneKept: the zone did not change during the fault (its SOA serial and
// its count of names).
func (e *env) zoneKept() criterion {
	r := e.res
	n, ok := r.Names[observe.PhaseDuring]
	return criterion{"the zone unchanged during the fault (SOA serial, names)",
		fmt.Sprintf("serial %d → %d, %g to %g names", r.SerialStart, r.SerialEnd, n[0], n[1]),
		ok && r.SerialStart != 0 && r.SerialStart == r.SerialEnd && n[0] == n[1]}
}

// leaderMoved: leader.mesos answers the new leader.
func (e *env) leaderMoved() criterion {
	r := e.res
	return criterion{"leader.mesos follows the new leader", fmt.Sprintf("%s → %s, answered %s", r.LeaderBefore, r.LeaderAfter, r.LeaderServed),
		r.LeaderServed == r.LeaderAfter && r.LeaderAfter != r.LeaderBefore}
}

// pollsCriterion: during the slow fault each poll ends within its
// attempts' timeouts; after the failover they are quick again.
func (e *env) pollsCriterion(delay time.Duration) criterion {
	r := e.res
	bound := float64(e.sc.attempts)*e.cfg.StateTimeout.Seconds()*1000 + 500
	d, a := r.Polls[observe.PhaseDuring], r.Polls[observe.PhaseAfter]
	return criterion{fmt.Sprintf("polls end at the state_timeout (the master answers after %s), quick once the other leads", delay),
		fmt.Sprintf("during: %d polls, mean %.0f ms; after: %d, mean %.0f ms", d.Polls, d.MeanMs, a.Polls, a.MeanMs),
		d.Polls > 0 && d.MeanMs <= bound && a.Polls > 0 && a.MeanMs < e.cfg.StateTimeout.Seconds()*1000}
}

// pollCounters are the server's poll metrics at one moment.
type pollCounters struct {
	count, sum float64
	buckets    map[string]float64 // poll_duration_seconds by le
	results    map[string]float64 // polls_total by result
}

// pollPhase is what the polls of one phase were.
type pollPhase struct {
	Polls  int
	MeanMs float64
	// MaxMs is the upper bound of the histogram bucket of the longest
	// poll (-1 beyond the last).
	MaxMs    float64
	ByResult map[string]int
}

// readPolls reads the poll metrics as phase begins.
func (e *env) readPolls(phase string) {
	c := pollCounters{}
	var err error
	if c.buckets, err = e.srv.MetricByLabel("coredns_mesosschema_poll_duration_seconds_bucket", "le"); err != nil {
		return
	}
	if c.results, err = e.srv.MetricByLabel("coredns_mesosschema_polls_total", "result"); err != nil {
		return
	}
	c.count, _ = e.srv.SumMetric("coredns_mesosschema_poll_duration_seconds_count")
	c.sum, _ = e.srv.SumMetric("coredns_mesosschema_poll_duration_seconds_sum")
	e.polls[phase] = c
}

// since is what the polls between from and c were.
func (c pollCounters) since(from pollCounters) pollPhase {
	p := pollPhase{Polls: int(c.count - from.count), MaxMs: -1, ByResult: map[string]int{}}
	if p.Polls > 0 {
		p.MeanMs = (c.sum - from.sum) / float64(p.Polls) * 1000
	}
	for k, v := range c.results {
		if n := int(v - from.results[k]); n > 0 {
			p.ByResult[k] = n
		}
	}
	best := math.Inf(1)
	for le, v := range c.buckets {
		bound, err := strconv.ParseFloat(le, 64)
		if err == nil && int(v-from.buckets[le]) == p.Polls && bound < best {
			best = bound
		}
	}
	if !math.IsInf(best, 1) {
		p.MaxMs = best * 1000
	}
	return p
}

func (p pollPhase) String() string {
	if p.Polls == 0 {
		return "none"
	}
	var parts []string
	for _, k := range []string{"changed", "unchanged", "held", "error"} {
		if n := p.ByResult[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	longest := "over the last bucket"
	if p.MaxMs >= 0 {
		longest = fmt.Sprintf("≤ %.0f ms", p.MaxMs)
	}
	return fmt.Sprintf("%d (%s), mean %.0f ms, longest %s", p.Polls, strings.Join(parts, ", "), p.MeanMs, longest)
}

// ok: every Mesos scenario run passed.
func (m *Results) ok() bool {
	return len(m.Errors) == 0 && len(m.Scenarios) > 0 &&
		!slices.ContainsFunc(m.Scenarios, func(r *Result) bool { return !r.ok() })
}

// Write writes the Mesos part of the page, if m holds a run.
func Write(r *report.Doc, m *Results) {
	if m == nil {
		return
	}
	r.Heading(2, "Mesos (mesosschema)")
	r.Line("Generated by `soak/` as well: reproduce with `%s` (the Mesos scenarios took %s on this machine).",
		m.Command, m.Finished.Sub(m.Started).Round(time.Second))
	r.Line("Each scenario starts stand-in Mesos masters (`internal/mesosmaster`: real HTTP servers on 127.0.0.2 and "+
		"127.0.0.3) and a `bin/coredns` of its own running *mesosschema* (refresh %s, state_timeout %s), with no "+
		"API server.", m.Refresh, m.StateTimeout)
	r.Line("The masters serve a generated cluster whose tasks change at every refresh: instances of one app in ten " +
		"are killed (gone from the state) and others started, on random agents with new ports and addresses, and " +
		"every tenth change one app loses all its instances, so that its names go and come back. A marker task is " +
		"restarted in every state with the state's number in its address: asking for it says which state the " +
		"server serves, and when it first served it.")
	r.Line("A checker asks the server over UDP (TCP when truncated) for the A records of the task names and " +
		"instance names, and the SRV records of `_<task>._tcp`, of the changing apps and of a sample of the " +
		"others, plus `leader.mesos`, round robin at the check rate. It computes each name's records in every " +
		"state the masters served, on its own from the naming document (with mesosstate's parsers), and judges " +
		"every answer: it must equal the records of one good state, whole (never a mix, never empty or NXDOMAIN " +
		"where that state has records, never SERVFAIL), a state that was still current, or replaced less than " +
		"the staleness allowed (refresh + state_timeout per fetch that can time out in one poll + 1 s to build) " +
		"before the query left; and not older than a state the server had already shown for that name. Bad " +
		"states and held states are never good states: the server must never show them.")
	r.Line("Readiness and `coredns_mesosschema_master_reachable` are sampled every 250 ms, " +
		"`coredns_mesosschema_names` with them; the SOA serial is read as each fault begins and ends.")
	r.End()
	r.Run(m.Started, m.Finished, m.Durations, m.Note)
	r.Line("- Cluster: %s.", m.Cluster)
	r.End()
	r.Heading(3, "Machine of the Mesos run")
	r.Table(m.Machine.Table())
	r.Heading(3, "Summary of the Mesos run")
	r.Para("Every Mesos scenario passed: %s.", report.YesNo(m.ok()))
	t := report.Table("scenario", "criterion", "result")
	for _, s := range m.Scenarios {
		for _, c := range s.Criteria {
			t.Row(s.Title, c.What, report.PassFail(c.OK)+": "+c.Result)
		}
	}
	r.Table(t)
	for _, s := range m.Scenarios {
		writeScenario(r, s)
	}
	if len(m.Errors) > 0 {
		r.Heading(3, "Errors of the Mesos run")
		r.List(m.Errors)
	}
}

func writeScenario(r *report.Doc, s *Result) {
	r.Heading(3, "Mesos: %s", s.Title)
	r.Para("`mesosschema { %s }`, staleness allowed %.1f s. The fault:", s.Stanza, s.WindowSeconds)
	r.List(s.Steps)
	t := report.Table("", "before", "during the fault", "after")
	byPhase := func(name string, f func(phase string) string) {
		t.Row(name, f(observe.PhaseBefore), f(observe.PhaseDuring), f(observe.PhaseAfter))
	}
	byPhase("answers checked (wrong)", func(ph string) string {
		p := s.Phases[ph]
		return fmt.Sprintf("%d (%d)", p.Answers, p.Wrong)
	})
	if s.FaultChanges.N == 0 { // the tasks did not change during the fault
		during := s.Phases[observe.PhaseDuring]
		t.Row("answers from the last good state before the fault", "", fmt.Sprintf("%d of %d", during.FromPinned, during.Answers), "")
	}
	byPhase("ready samples", func(ph string) string { return s.Ready[s.Name][ph] })
	byPhase("master_reachable, lowest (last)", func(ph string) string { return fmt.Sprintf("%g (%g)", s.Gauge[ph], s.GaugeLast[ph]) })
	byPhase("names served, lowest–highest", func(ph string) string { return fmt.Sprintf("%g–%g", s.Names[ph][0], s.Names[ph][1]) })
	byPhase("polls", func(ph string) string { return s.Polls[ph].String() })
	r.Table(t)
	c := s.Check
	r.Line("- Answers: %d checked, %d wrong, %d SERVFAIL, %d unanswered (timeouts); %d good states served in all.",
		c.Answers, c.Wrong(), c.ServFail, c.Errors, s.States)
	r.Line("- master_reachable: 0 %s after the fault began, 1 again %s after it ended.", report.Secs(s.GaugeDown), report.Secs(s.GaugeUp))
	r.Line("- SOA serial as the fault began and ended: %d → %d.", s.SerialStart, s.SerialEnd)
	r.Line("- %s: served %s after it was.", capitalise(s.ServeWhat), report.Secs(s.ServeSeconds))
	if s.LeaderBefore != s.LeaderAfter {
		r.Line("- leader.mesos: %s before, %s after (answered at the end: %s).", s.LeaderBefore, s.LeaderAfter, s.LeaderServed)
	}
	if s.Held > 0 {
		r.Line("- Polls held back (a state without agents): %.0f.", s.Held)
	}
	r.Line("- Every state, from being served by a master to its first answer: p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d states).",
		s.Changes.P50, s.Changes.P99, s.Changes.Max, s.Changes.N)
	if f := s.FaultChanges; f.N > 0 || s.FaultUnseen > 0 {
		r.Line("- The states the tasks' changes made during the fault, from being served by the master to the first "+
			"answer: p50 %.0f ms, max %.0f ms (%d shown, %d replaced before a poll fetched them).", f.P50, f.Max, f.N, s.FaultUnseen)
	}
	r.Line("- Log lines about the masters from the fault's start: %d outage, %d recovery, %d held back (before it, "+
		"start-up included: %d, %d, %d). The plugin's lines:", s.Logs["outage"], s.Logs["recovery"], s.Logs["held"],
		s.LogsBefore["outage"], s.LogsBefore["recovery"], s.LogsBefore["held"])
	r.End()
	r.Line("~~~")
	for _, l := range s.LogLines {
		r.Line("%s", l)
	}
	r.Line("~~~")
	if ex := c.Examples; len(ex) > 0 {
		r.End()
		r.Line("First wrong answers: %s.", strings.Join(ex, "; "))
	}
	r.End()
}

func capitalise(s string) string {
	if s == "" {
		return "The state after the fault"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
