package disruptions

import "testing"

// TestDropsSince: a pod's shed count since before, a new pod's whole, a
// restarted pod's none.
func TestDropsSince(t *testing.T) {
	before := map[string]float64{"a": 10, "b": 50}
	after := map[string]float64{"a": 13, "b": 4, "c": 7}
	if got := dropsSince(before, after); got != 10 {
		t.Errorf("dropsSince = %v, want 10 (3 from a, 7 from the new c, none from the restarted b)", got)
	}
}
