package watchcache

import (
	"errors"
	"testing"
)

// TestProbeMarksUnreachable: a failed probe sets api_reachable to 0, a
// later success sets it back; a probe success does not clear an outage
// that a failed watch reported.
func TestProbeMarksUnreachable(t *testing.T) {
	s := newConnState(EndpointSlices)
	gauge := apiReachable.WithLabelValues(resourceNames[EndpointSlices])
	stalled := errors.New("context deadline exceeded")
	s.probed(stalled)
	if v := gaugeValue(t, gauge); v != 0 {
		t.Fatalf("after a failed probe: %v, want 0", v)
	}
	s.probed(nil)
	if v := gaugeValue(t, gauge); v != 1 {
		t.Fatalf("after a probe that succeeded: %v, want 1", v)
	}
	s.mu.Lock()
	s.setReachable(false, errors.New("watch failed"))
	s.mu.Unlock()
	s.probed(nil)
	if v := gaugeValue(t, gauge); v != 0 {
		t.Fatalf("a probe cleared a watch's outage: %v, want 0", v)
	}
}
