package hold

import (
	"context"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Outcomes of a held query, the "outcome" label.
const (
	outcomeAnswered = "answered" // a later try got a reply
	outcomeFailed   = "failed"   // the window or the client's deadline ran out, or a try failed otherwise
)

var (
	held = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "duration_seconds",
		Help:    "How long queries were held while their upstream could not be reached, by outcome (answered or failed).",
		Buckets: []float64{.025, .05, .1, .25, .5, 1, 1.5, 2, 3, 5},
	}, []string{"server", "outcome"})
	retries = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "retries_total",
		Help: "Queries sent down the chain again after their upstream could not be reached.",
	}, []string{"server"})
)

func observe(ctx context.Context, start time.Time, outcome string) {
	held.WithLabelValues(metrics.WithServer(ctx), outcome).Observe(time.Since(start).Seconds())
}

func outcomeOf(wrote bool) string {
	if wrote {
		return outcomeAnswered
	}
	return outcomeFailed
}
