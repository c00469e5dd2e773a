package kubesource

import (
	"sync"
	"testing"
	"time"
)

// TestTrackerKeepsOldest marks one key at three times, out of order: the
// taken set holds the oldest, and a second Take finds nothing.
func TestTrackerKeepsOldest(t *testing.T) {
	var tr Tracker
	k := Key{Namespace: "ns", Name: "web"}
	t0 := time.Unix(1000, 0)
	tr.Mark(k, t0.Add(time.Second))
	tr.Mark(k, t0)
	tr.Mark(k, t0.Add(2*time.Second))
	tr.MarkNamespace("ns")
	tr.MarkLocal(k)
	tr.MarkRanges()
	got := tr.Take()
	if len(got.Keys) != 1 || !got.Keys[k].Equal(t0) {
		t.Errorf("Keys = %v, want %s at %s", got.Keys, k, t0)
	}
	if !got.Namespaces["ns"] || !got.Local[k] || !got.Ranges || got.Empty() {
		t.Errorf("Take = %+v, want the namespace, the local key and the ranges marked", got)
	}
	if again := tr.Take(); !again.Empty() {
		t.Errorf("second Take = %+v, want nothing", again)
	}
}

func TestKeyNames(t *testing.T) {
	k := Key{Namespace: "prod", Name: "web"}
	if k.String() != "prod/web" || k.Labels() != "web.prod" {
		t.Errorf("String %q, Labels %q", k.String(), k.Labels())
	}
}

// TestTrackerConcurrent marks from several goroutines while another takes
// (run under -race): every key marked is taken exactly once or is still
// there at the end.
func TestTrackerConcurrent(t *testing.T) {
	var tr Tracker
	const writers, each = 4, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				tr.Mark(Key{Namespace: "ns", Name: string(rune('a'+w)) + string(rune(i))}, time.Now())
			}
		})
	}
	seen := map[Key]bool{}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	collect := func() {
		for k := range tr.Take().Keys {
			if seen[k] {
				t.Errorf("%s taken twice", k)
			}
			seen[k] = true
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			collect()
		}
	}
	collect()
	if len(seen) != writers*each {
		t.Errorf("took %d keys, want %d", len(seen), writers*each)
	}
}
