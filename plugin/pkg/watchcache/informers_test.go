package watchcache

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// informerCount is coredns_watchcache_informers for resource.
func informerCount(t *testing.T, resource string) float64 {
	t.Helper()
	var m dto.Metric
	if err := informers.WithLabelValues(resource).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// TestInformersGauge: handles of one Config share one informer per
// resource, and the gauge counts informers, not handles; an informer
// stops with the last handle that asked for its resource.
func TestInformersGauge(t *testing.T) {
	e := newEnv(t, "wc-informers")
	resources := []string{"services", "endpointslices", "serviceimports"}
	before := map[string]float64{}
	for _, r := range resources {
		before[r] = informerCount(t, r)
	}
	expect := func(when string, delta map[string]float64) {
		t.Helper()
		for _, r := range resources {
			if got, want := informerCount(t, r), before[r]+delta[r]; got != want {
				t.Errorf("%s: %s informers %v, want %v", when, r, got, want)
			}
		}
	}
	e.acquire(Services | EndpointSlices)
	h := e.acquire(EndpointSlices | ServiceImports)
	expect("two handles", map[string]float64{"services": 1, "endpointslices": 1, "serviceimports": 1})
	h.Release()
	expect("after one Release", map[string]float64{"services": 1, "endpointslices": 1})
}
