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
