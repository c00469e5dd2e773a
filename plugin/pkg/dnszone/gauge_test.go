package dnszone

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// TestInstanceGaugeSurvivesReloadOrder: new instance up, then old down,
// leaves the gauge at 1; the last one down sets 0; a second down of the
// same instance changes nothing.
func TestInstanceGaugeSurvivesReloadOrder(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
	ig := newInstanceGauge(g)
	oldDown := ig.Up()
	newDown := ig.Up()
	oldDown()
	oldDown()
	if v := gaugeValue(t, g); v != 1 {
		t.Fatalf("after the old instance went down: %v, want 1", v)
	}
	newDown()
	if v := gaugeValue(t, g); v != 0 {
		t.Fatalf("after the last instance went down: %v, want 0", v)
	}
}
