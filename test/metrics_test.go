package test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The servers started in-process register their metrics in the default
// registry; these read them back.

// gaugeValue reads an unlabelled gauge from the default registry.
func gaugeValue(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// informerCounts reads coredns_watchcache_informers, by resource, from the
// default registry (a resource never watched reads 0).
func informerCounts(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{"services": 0, "endpointslices": 0, "serviceimports": 0}
	for r, v := range byResource(t, "coredns_watchcache_informers") {
		if _, ok := out[r]; ok {
			out[r] = v
		}
	}
	return out
}

// byResource reads a gauge or counter vector of the default registry by
// its resource label; a resource with no series is absent.
func byResource(t *testing.T, name string) map[string]float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" {
					out[l.GetValue()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// addCounts is a with delta added.
func addCounts(a, delta map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] = v + delta[k]
	}
	return out
}

// programmingCounts reads how many changes plugin has served, by service
// kind, from the programming histogram in the default registry.
func programmingCounts(t *testing.T, plugin string) map[string]uint64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "coredns_dns_programming_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["plugin"] == plugin {
				out[labels["service_kind"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return out
}
