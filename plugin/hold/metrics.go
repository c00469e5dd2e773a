package hold

import (
	"time"

	"github.com/coredns/coredns/plugin"
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
	// heldNow is added to and taken from, not set: the blocks of one
	// Corefile on one port share the server label.
	heldNow = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "held_queries",
		Help: "Queries held now, waiting for their upstream.",
	}, []string{"server"})
	rejected = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "rejected_total",
		Help: "Queries that failed at once instead of being held or sent again, by reason (count, bytes: max_held was reached; resent: lost after it was written, and sent again once already).",
	}, []string{"server", "reason"})
	throttled = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "throttled_total",
		Help: "Retries of held queries skipped because the retry budget was spent.",
	}, []string{"server"})
)

func observe(server string, start time.Time, outcome string) {
	held.WithLabelValues(server, outcome).Observe(time.Since(start).Seconds())
}

func outcomeOf(wrote bool) string {
	if wrote {
		return outcomeAnswered
	}
	return outcomeFailed
}
