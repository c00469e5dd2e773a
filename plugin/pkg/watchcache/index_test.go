package watchcache

import (
	"net/netip"
	"testing"
)

// TestIndexUpdates: adds, a change of the label a slice is indexed by, a
// delete by an object that is not the cached pointer (as a watch delivers
// it); a slice handed out before a change does not change.
func TestIndexUpdates(t *testing.T) {
	x := newIndexes(EndpointSlices)
	mk := func(name, svc string) *EndpointSlice {
		return &EndpointSlice{objectMeta: objectMeta{namespace: "ns", name: name}, Service: svc}
	}
	a, b := mk("a", "web"), mk("b", "web")
	x.update(nil, a)
	x.update(nil, b)
	before := x.slicesByService.get(nsName{"ns", "web"})
	if len(before) != 2 {
		t.Fatalf("web has %d slices, want 2", len(before))
	}
	b2 := mk("b", "web") // a new version of b: takes its place
	x.update(b, b2)
	if got := x.slicesByService.get(nsName{"ns", "web"}); len(got) != 2 || got[0] != a || got[1] != b2 {
		t.Errorf("web after b changed: %v", got)
	}
	if before[1] != b {
		t.Error("a slice handed out before the change changed")
	}
	b = b2
	moved := mk("b", "db")
	x.update(b, moved)
	if got := x.slicesByService.get(nsName{"ns", "web"}); len(got) != 1 || got[0] != a {
		t.Errorf("web after b moved: %v", got)
	}
	if got := x.slicesByService.get(nsName{"ns", "db"}); len(got) != 1 || got[0] != moved {
		t.Errorf("db after b moved: %v", got)
	}
	x.update(mk("a", "web"), nil) // the watch's copy of a, not the cached pointer
	if got := x.slicesByService.get(nsName{"ns", "web"}); got != nil {
		t.Errorf("web after a was deleted: %v", got)
	}

	pods := newIndexes(Pods)
	ip := netip.MustParseAddr("10.0.0.1")
	p := &Pod{objectMeta: objectMeta{namespace: "ns", name: "p"}, IPs: []netip.Addr{ip}}
	pods.update(nil, p)
	if got := pods.podsByIP.get(ip); len(got) != 1 || got[0] != p {
		t.Errorf("pod by IP: %v", got)
	}
	pods.update(p, nil)
	if got := pods.podsByIP.get(ip); got != nil {
		t.Errorf("pod by IP after delete: %v", got)
	}
}
