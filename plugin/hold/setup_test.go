package hold

import (
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/stanza/stanzatest"
)

func TestHoldSetup(t *testing.T) {
	for _, tc := range []struct {
		corefile string
		window   time.Duration
		err      string // part of the error; "" for none
	}{
		{corefile: "hold", window: 2 * time.Second},
		{corefile: "hold 1500ms", window: 1500 * time.Millisecond},
		{corefile: "hold 5s", window: 5 * time.Second},
		{corefile: "hold 6s", err: "at most 5s"},
		{corefile: "hold 0s", err: "more than 0"},
		{corefile: "hold soon", err: "window"},
		{corefile: "hold 1s 2s", err: "Wrong argument count"},
		{corefile: "hold {\n backoff 1s\n}", err: `unknown property "backoff"`},
		{corefile: "hold\nhold", err: "only be used once"},
	} {
		h, ok := stanzatest.Parse(t, tc.corefile, tc.err, parse)
		if !ok {
			continue
		}
		if h.window != tc.window || h.first != firstPause || h.most != maxPause {
			t.Errorf("%q: window %s, pauses %s to %s", tc.corefile, h.window, h.first, h.most)
		}
	}
}
