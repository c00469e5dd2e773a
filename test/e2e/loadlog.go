package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// loadLog is what a load pod's `resolve loop` printed: a tick a second
// with the lookups completed in it, and a line per failed or slow lookup.
type loadLog struct {
	ticks []tick
	fails []event
	slows []event
}

type tick struct {
	at       time.Time
	ok, fail int
	maxMs    int
}

type event struct {
	at    time.Time
	name  string
	ms    int
	error string
}

// parseLoadLog reads the lines `tick MS ok=N fail=N maxms=N`,
// `fail MS NAME MS ERROR...` and `slow MS NAME MS`.
func parseLoadLog(s string) loadLog {
	var l loadLog
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
			ev := event{at: at, name: f[2], ms: lat, error: strings.Join(f[4:], " ")}
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

// counts are a phase's lookups; failFresh counts the failed lookups of
// new names (isFresh).
type counts struct {
	ok, fail, slow, maxMs int
	failFresh             int
	failed, slowed        []event
}

// isFresh tells a new name of the load (the "{n}" of resolve.c: a pod
// record, whole or short, as the autopath client asks it) from the names
// the load asks again and again.
func isFresh(name string) bool {
	return strings.Contains(name, ".pod.cluster.local") || strings.HasSuffix(name, ".e2e.pod")
}

// count adds up the ticks in [from, to) and the failures and slow lookups
// started in it.
func (l loadLog) count(from, to time.Time) counts {
	var c counts
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	for _, t := range l.ticks {
		if in(t.at) {
			c.ok += t.ok
			c.fail += t.fail
			c.maxMs = max(c.maxMs, t.maxMs)
		}
	}
	for _, ev := range l.fails {
		if in(ev.at) {
			c.failed = append(c.failed, ev)
			if isFresh(ev.name) {
				c.failFresh++
			}
		}
	}
	for _, ev := range l.slows {
		if in(ev.at) {
			c.slow++
			c.slowed = append(c.slowed, ev)
		}
	}
	return c
}

// examples names the first failed lookups, for the report.
func (c counts) examples() string {
	if len(c.failed) == 0 {
		return ""
	}
	var parts []string
	for i, ev := range c.failed {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s at %s after %d ms: %s", ev.name, ev.at.Format("15:04:05.000"), ev.ms, ev.error))
	}
	return "; " + strings.Join(parts, "; ")
}

// timeline says when, from t, the first and last failed and slow lookups
// started, for the log.
func (c counts) timeline(t time.Time) string {
	span := func(what string, evs []event) string {
		if len(evs) == 0 {
			return ""
		}
		// A lookup is logged when it ends: the earliest to start may come
		// later in the log.
		first, last := evs[0].at, evs[0].at
		var names []string
		for i, ev := range evs {
			if ev.at.Before(first) {
				first = ev.at
			}
			if ev.at.After(last) {
				last = ev.at
			}
			if i < 3 {
				names = append(names, ev.name)
			}
		}
		return fmt.Sprintf("%s started %+.1f s to %+.1f s (%s); ", what, first.Sub(t).Seconds(), last.Sub(t).Seconds(), strings.Join(names, ", "))
	}
	return span("failed", c.failed) + span("slow", c.slowed)
}

// execOutput runs a command and returns its stdout; stderr is in the error.
func execOutput(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return string(out), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
