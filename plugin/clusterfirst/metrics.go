package clusterfirst

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Classes of a dropped query, the "class" label.
const (
	classCluster = "cluster" // in the cluster zones: dropped past the bound only
	classOther   = "other"   // outside them: dropped from the target on
)

var (
	dropped = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "dropped_total",
		Help: "UDP queries dropped without a reply under overload, by class of name (cluster, other).",
	}, []string{"server", "class"})
	// The gauges are the process's: every instance measures the same
	// runtime, so the last to sample writes them.
	queueDelay = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "queue_delay_seconds",
		Help: "The 90th percentile of how long goroutines waited to run in the last 10 ms.",
	})
	dropProbability = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "drop_probability",
		Help: "The probability that a UDP query is dropped now, by class of name (cluster, other).",
	}, []string{"class"})
)
