package main

import (
	"testing"
	"time"
)

// TestLoadLogCount: a phase counts the ticks, failures and slow lookups
// that started in it, and tells the failures of new names apart.
func TestLoadLogCount(t *testing.T) {
	log := `tick 1000 ok=10 fail=0 maxms=3
fail 1600 10-1-2-3.e2e.pod.cluster.local. 2001 Temporary failure in name resolution
fail 1500 web.e2e.svc.cluster.local 2 Temporary failure in name resolution
slow 1700 www.external.test 5012
tick 2000 ok=8 fail=2 maxms=5012
fail 3500 web 1 Name or service not known
tick 3000 ok=9 fail=1 maxms=4
fail 3600 17-4-5-6.e2e.pod 2000 Temporary failure in name resolution
`
	l := parseLoadLog(log)
	c := l.count(time.UnixMilli(1000), time.UnixMilli(3000))
	if c.ok != 18 || c.fail != 2 || c.slow != 1 || c.maxMs != 5012 || c.failFresh != 1 || len(c.failed) != 2 {
		t.Errorf("count [1 s, 3 s) = ok %d fail %d slow %d max %d fresh %d failed %d; want 18 2 1 5012 1 2",
			c.ok, c.fail, c.slow, c.maxMs, c.failFresh, len(c.failed))
	}
	// Logged as they end: the first line is not the first to start.
	want := "failed started +0.5 s to +0.6 s (10-1-2-3.e2e.pod.cluster.local., web.e2e.svc.cluster.local); slow started +0.7 s to +0.7 s (www.external.test); "
	if got := c.timeline(time.UnixMilli(1000)); got != want {
		t.Errorf("timeline = %q, want %q", got, want)
	}
	if c := l.count(time.UnixMilli(3000), time.UnixMilli(4000)); c.fail != 1 || c.failFresh != 1 || len(c.failed) != 2 {
		t.Errorf("count [3 s, 4 s): fail %d fresh %d failed %d; want 1 (a tick's), 1 and 2", c.fail, c.failFresh, len(c.failed))
	}
}

// TestDropsSince: a pod's shed count since before, a new pod's whole, a
// restarted pod's none.
func TestDropsSince(t *testing.T) {
	before := map[string]float64{"a": 10, "b": 50}
	after := map[string]float64{"a": 13, "b": 4, "c": 7}
	if got := dropsSince(before, after); got != 10 {
		t.Errorf("dropsSince = %v, want 10 (3 from a, 7 from the new c, none from the restarted b)", got)
	}
}
