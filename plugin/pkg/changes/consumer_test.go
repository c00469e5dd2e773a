package changes

import (
	"context"
	"testing"
	"time"
)

// TestWaitApplyGap: a build long after the last one goes on; one right
// after it waits out the gap, or gives up when the consumer stops.
func TestWaitApplyGap(t *testing.T) {
	ctx := context.Background()
	if !waitApplyGap(ctx, time.Time{}) || !waitApplyGap(ctx, time.Now().Add(-time.Second)) {
		t.Fatal("a build long after the last one did not start")
	}
	last := time.Now()
	if !waitApplyGap(ctx, last) {
		t.Fatal("the wait gave up without a cancel")
	}
	if waited := time.Since(last); waited < applyGap {
		t.Errorf("a build right after the last one waited %s, not %s", waited, applyGap)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if waitApplyGap(stopped, time.Now()) {
		t.Error("a stopped consumer's wait went on to build")
	}
}
