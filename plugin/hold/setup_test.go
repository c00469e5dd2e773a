package hold

import (
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/schemadns/schemadns/plugin/pkg/stanza/stanzatest"
)

// parsed is what parse returns, as one value for stanzatest.
type parsed struct {
	h   *Hold
	lim limits
}

func parseBoth(c *caddy.Controller) (parsed, error) {
	h, lim, err := parse(c)
	return parsed{h, lim}, err
}

func TestHoldSetup(t *testing.T) {
	small := int64(heldOverhead + 512)
	for _, tc := range []struct {
		corefile    string
		window      time.Duration
		lim         limits
		earn, burst int64  // the retry budget, in tokens
		floor       int64  // in tokens a second
		err         string // part of the error; "" for none
	}{
		{corefile: "hold", window: 3 * time.Second},
		{corefile: "hold 1500ms", window: 1500 * time.Millisecond},
		{corefile: "hold 5s", window: 5 * time.Second},
		{corefile: "hold {\n max_held 500\n}", window: 3 * time.Second, lim: limits{500, 500 * small}},
		{corefile: "hold 1s {\n max_held 500 8Mi\n}", window: time.Second, lim: limits{500, 8 << 20}},
		{corefile: "hold {\n max_held 0 16MiB\n}", window: 3 * time.Second, lim: limits{0, 16 << 20}},
		{corefile: "hold {\n max_held 10 4096\n}", window: 3 * time.Second, lim: limits{10, 4096}},
		{corefile: "hold {\n retry_budget 0.5\n}", window: 3 * time.Second, earn: 500},
		{corefile: "hold {\n retry_budget 2 40\n}", window: 3 * time.Second, earn: 2000, burst: 40},
		{corefile: "hold {\n retry_budget 2 40 0.5\n}", window: 3 * time.Second, earn: 2000, burst: 40, floor: 500},
		{corefile: "hold 6s", err: "at most 5s"},
		{corefile: "hold 0s", err: "more than 0"},
		{corefile: "hold soon", err: "window"},
		{corefile: "hold 1s 2s", err: "Wrong argument count"},
		{corefile: "hold {\n backoff 1s\n}", err: `unknown property "backoff"`},
		{corefile: "hold {\n max_held\n}", err: "Wrong argument count"},
		{corefile: "hold {\n max_held -1\n}", err: "want a count"},
		{corefile: "hold {\n max_held 10 lots\n}", err: `max_held size "lots"`},
		{corefile: "hold {\n max_held 10 8Ti\n}", err: `max_held size "8Ti"`},
		{corefile: "hold {\n retry_budget\n}", err: "Wrong argument count"},
		{corefile: "hold {\n retry_budget 101\n}", err: "from 0 to 100"},
		{corefile: "hold {\n retry_budget 1 -2\n}", err: "retry_budget burst"},
		{corefile: "hold {\n retry_budget 1 0\n}", err: "1 or more"},
		{corefile: "hold {\n retry_budget 1 10 -1\n}", err: "retry_budget floor"},
		{corefile: "hold {\n retry_budget 1 10 0 4\n}", err: "Wrong argument count"},
		{corefile: "hold\nhold", err: "only be used once"},
	} {
		p, ok := stanzatest.Parse(t, tc.corefile, tc.err, parseBoth)
		if !ok {
			continue
		}
		if tc.lim == (limits{}) {
			tc.lim = limits{defaultMaxHeld, defaultMaxHeldBytes}
		}
		if tc.earn == 0 {
			tc.earn = defaultRetryRatio * tokenScale
		}
		if tc.burst == 0 {
			tc.burst = defaultRetryBurst
		}
		if tc.floor == 0 {
			tc.floor = defaultRetryFloor * tokenScale
		}
		h := p.h
		if h.window != tc.window || h.first != firstPause || h.most != maxPause || p.lim != tc.lim ||
			h.retries.earn != tc.earn || h.retries.most != tc.burst*tokenScale || h.retries.tokens.Load() != h.retries.most || h.retries.perSecond != tc.floor {
			t.Errorf("%q: window %s, pauses %s to %s, limits %+v, retries %d/%d; want %s, %+v, %d/%d", tc.corefile,
				h.window, h.first, h.most, p.lim, h.retries.earn, h.retries.most, tc.window, tc.lim, tc.earn, tc.burst*tokenScale)
		}
	}
}

// TestHoldSharedBudget: the hold blocks of one Corefile share one budget,
// and must agree on its limits; another Corefile (a reload) has its own.
func TestHoldSharedBudget(t *testing.T) {
	c := caddy.NewTestController("dns", "hold")
	a, err := sharedBudget(c, limits{100, 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sharedBudget(c, limits{100, 1 << 20})
	if err != nil || a != b {
		t.Errorf("second block: budget %p, %v; want the first's %p", b, err, a)
	}
	if _, err := sharedBudget(c, limits{50, 1 << 20}); err == nil {
		t.Error("a block with other limits was taken")
	}
	other, err := sharedBudget(caddy.NewTestController("dns", "hold"), limits{100, 1 << 20})
	if err != nil || other == a {
		t.Errorf("another Corefile: budget %p, %v; want one of its own", other, err)
	}
}
