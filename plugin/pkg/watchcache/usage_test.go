package watchcache

import (
	"reflect"
	"testing"
)

// TestInUse shows InUse reporting the live cache of a Config: its handles
// and, per resource, the handles sharing the one informer.
func TestInUse(t *testing.T) {
	e := newEnv(t, "wc-inuse")
	mine := func() []Usage {
		var out []Usage
		for _, u := range InUse() {
			if u.Config == e.cfg {
				out = append(out, u)
			}
		}
		return out
	}
	if u := mine(); len(u) != 0 {
		t.Fatalf("InUse before Acquire: %+v", u)
	}
	e.acquire(Services | EndpointSlices)
	h := e.acquire(EndpointSlices | ServiceImports)
	want := []Usage{{Config: e.cfg, Handles: 2, Watches: map[string]int{"services": 1, "endpointslices": 2, "serviceimports": 1}}}
	if got := mine(); !reflect.DeepEqual(got, want) {
		t.Errorf("InUse = %+v, want %+v", got, want)
	}
	h.Release()
	want = []Usage{{Config: e.cfg, Handles: 1, Watches: map[string]int{"services": 1, "endpointslices": 1}}}
	if got := mine(); !reflect.DeepEqual(got, want) {
		t.Errorf("InUse after one Release = %+v, want %+v", got, want)
	}
}
