package loadlog

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
	l := Parse(log)
	c := l.Count(time.UnixMilli(1000), time.UnixMilli(3000))
	if c.OK != 18 || c.Fail != 2 || c.Slow != 1 || c.MaxMs != 5012 || c.FailFresh != 1 || len(c.Failed) != 2 {
		t.Errorf("count [1 s, 3 s) = ok %d fail %d slow %d max %d fresh %d failed %d; want 18 2 1 5012 1 2",
			c.OK, c.Fail, c.Slow, c.MaxMs, c.FailFresh, len(c.Failed))
	}
	// Logged as they end: the first line is not the first to start.
	want := "failed started +0.5 s to +0.6 s (10-1-2-3.e2e.pod.cluster.local., web.e2e.svc.cluster.local); slow started +0.7 s to +0.7 s (www.external.test); "
	if got := c.Timeline(time.UnixMilli(1000)); got != want {
		t.Errorf("timeline = %q, want %q", got, want)
	}
	if c := l.Count(time.UnixMilli(3000), time.UnixMilli(4000)); c.Fail != 1 || c.FailFresh != 1 || len(c.Failed) != 2 {
		t.Errorf("count [3 s, 4 s): fail %d fresh %d failed %d; want 1 (a tick's), 1 and 2", c.Fail, c.FailFresh, len(c.Failed))
	}
}
