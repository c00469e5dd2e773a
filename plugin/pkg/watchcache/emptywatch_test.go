package watchcache

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// TestEmptyWatchIsUnreachable: client-go answers a watch whose every retry
// hit a dropped connection with an empty watch and no error; instrument
// must count it as the API server not reached, and the next real watch as
// reached again.
func TestEmptyWatchIsUnreachable(t *testing.T) {
	s := newConnState(Services)
	s.checking = false // no permission check in this test
	var next watch.Interface
	lw := s.instrument(&cache.ListWatch{
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return next, nil },
	})
	gauge := apiReachable.WithLabelValues(resourceNames[Services])
	next = watch.NewEmptyWatch()
	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("watch: %v, want the empty watch passed on without an error", err)
	}
	if v := gaugeValue(t, gauge); v != 0 {
		t.Fatalf("api_reachable after an empty watch = %v, want 0", v)
	}
	next = watch.NewFake()
	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := gaugeValue(t, gauge); v != 1 {
		t.Fatalf("api_reachable after a real watch = %v, want 1", v)
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
