// Package loadlog reads what a load client pod printed (resolve.c's
// `resolve loop`: a tick a second, a line per failed or slow lookup) and
// counts the lookups of a stretch of time: how the scenarios measure what
// clients saw through an upgrade, a relist or a disruption.
package loadlog

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Log is what a load pod's `resolve loop` printed: a tick a second with
// the lookups completed in it, and a line per failed or slow lookup.
type Log struct {
	ticks []tick
	fails []Event
	slows []Event
}

type tick struct {
	at       time.Time
	ok, fail int
	maxMs    int
}

// Event is one failed or slow lookup: when it started, the name, how long
// it took and, for a failure, the resolver's error.
type Event struct {
	At    time.Time
	Name  string
	Ms    int
	Error string
}

// Parse reads the lines `tick MS ok=N fail=N maxms=N`,
// `fail MS NAME MS ERROR...` and `slow MS NAME MS`.
func Parse(s string) Log {
	var l Log
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		ms, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		at := time.UnixMilli(ms)
		switch {
		case f[0] == "tick" && len(f) >= 5:
			l.ticks = append(l.ticks, tick{at: at, ok: kv(f[2]), fail: kv(f[3]), maxMs: kv(f[4])})
		case (f[0] == "fail" || f[0] == "slow") && len(f) >= 4:
			lat, _ := strconv.Atoi(f[3])
			ev := Event{At: at, Name: f[2], Ms: lat, Error: strings.Join(f[4:], " ")}
			if f[0] == "fail" {
				l.fails = append(l.fails, ev)
			} else {
				l.slows = append(l.slows, ev)
			}
		}
	}
	return l
}

// kv reads the number of "key=N".
func kv(s string) int {
	_, v, _ := strings.Cut(s, "=")
	n, _ := strconv.Atoi(v)
	return n
}

// Counts are a phase's lookups; FailFresh counts the failed lookups of
// new names (isFresh).
type Counts struct {
	OK, Fail, Slow, MaxMs int
	FailFresh             int
	Failed, Slowed        []Event
}

// isFresh tells a new name of the load (the "{n}" of resolve.c: a pod
// record, whole or short, as the autopath client asks it) from the names
// the load asks again and again.
func isFresh(name string) bool {
	return strings.Contains(name, ".pod.cluster.local") || strings.HasSuffix(name, ".e2e.pod")
}

// Count adds up the ticks in [from, to) and the failures and slow lookups
// started in it.
func (l Log) Count(from, to time.Time) Counts {
	var c Counts
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	for _, t := range l.ticks {
		if in(t.at) {
			c.OK += t.ok
			c.Fail += t.fail
			c.MaxMs = max(c.MaxMs, t.maxMs)
		}
	}
	for _, ev := range l.fails {
		if in(ev.At) {
			c.Failed = append(c.Failed, ev)
			if isFresh(ev.Name) {
				c.FailFresh++
			}
		}
	}
	for _, ev := range l.slows {
		if in(ev.At) {
			c.Slow++
			c.Slowed = append(c.Slowed, ev)
		}
	}
	return c
}

// Examples names the first failed lookups, for the report.
func (c Counts) Examples() string {
	if len(c.Failed) == 0 {
		return ""
	}
	var parts []string
	for i, ev := range c.Failed {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s at %s after %d ms: %s", ev.Name, ev.At.Format("15:04:05.000"), ev.Ms, ev.Error))
	}
	return "; " + strings.Join(parts, "; ")
}

// Timeline says when, from t, the first and last failed and slow lookups
// started, for the log.
func (c Counts) Timeline(t time.Time) string {
	span := func(what string, evs []Event) string {
		if len(evs) == 0 {
			return ""
		}
		// A lookup is logged when it ends: the earliest to start may come
		// later in the log.
		first, last := evs[0].At, evs[0].At
		var names []string
		for i, ev := range evs {
			if ev.At.Before(first) {
				first = ev.At
			}
			if ev.At.After(last) {
				last = ev.At
			}
			if i < 3 {
				names = append(names, ev.Name)
			}
		}
		return fmt.Sprintf("%s started %+.1f s to %+.1f s (%s); ", what, first.Sub(t).Seconds(), last.Sub(t).Seconds(), strings.Join(names, ", "))
	}
	return span("failed", c.Failed) + span("slow", c.Slowed)
}
