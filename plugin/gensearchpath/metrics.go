package gensearchpath

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Outcomes of an expansion, the "outcome" label.
const (
	outcomeFound    = "found"    // the client got an answer (NOERROR), from the cluster DNS or by fallthrough
	outcomeNXDOMAIN = "nxdomain" // the client got NXDOMAIN
	outcomeError    = "error"    // the client got SERVFAIL or another error
)

var (
	expansions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "expansions_total",
		Help: "Queries in the autopath search domain expanded, by outcome (found, nxdomain, error).",
	}, []string{"server", "outcome"})
	subqueries = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "subqueries",
		Help:    "Queries sent per expansion: to the cluster DNS (with retries over TCP and to other upstreams) and down the chain on fallthrough.",
		Buckets: []float64{1, 2, 3, 4, 6, 8, 16},
	}, []string{"server"})
	fallthroughs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "fallthroughs_total",
		Help: "Base names passed down the chain after the cluster DNS said NXDOMAIN for every search path.",
	}, []string{"server"})
)
