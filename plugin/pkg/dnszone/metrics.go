package dnszone

import (
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/schemadns/schemadns/plugin/pkg/replies"
)

// Metrics are what each schema plugin exports: coredns_<plugin>_requests_total
// and _synced under its own name, and its part (plugin label) of the one
// programming latency histogram, coredns_dns_programming_duration_seconds.
type Metrics struct {
	plugin string
	// Replies counts the answers ServeDNS writes (requests by result).
	Replies *replies.Counters
	// Synced keeps the synced gauge at 1 while any instance serves a
	// synced snapshot (reload-safe).
	Synced *instanceGauge
}

// programming is the time from a change in the API to the moment a plugin
// serves the new answer, for every plugin: one histogram, registered once
// per process.
var programming = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: plugin.Namespace, Subsystem: "dns", Name: "programming_duration_seconds",
	Help: "Time from a change in the source to the new answer being served, by plugin and kind of name " +
		"(Kubernetes: the EndpointSlice controller's trigger time when the object has it, else when the watch delivered the change; " +
		"Mesos: the task status's timestamp, else when the poll saw the change).",
	// 1 ms to about 30 s.
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
}, []string{"plugin", "service_kind"})

// NewMetrics registers a plugin's metrics. Call it once per process (a
// package variable), not per setup: a reload runs setup again.
func NewMetrics(pluginName string) *Metrics {
	requests := promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "requests_total",
		Help: "Queries answered, by result: success, nodata, nxdomain, refused, fallthrough, not_synced, error.",
	}, []string{"result"})
	synced := promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "synced",
		Help: "1 once the cache has synced and the first answers are built.",
	})
	return &Metrics{plugin: pluginName, Replies: replies.New(requests), Synced: newInstanceGauge(synced)}
}

// ObserveProgrammed records that a change made at changed to a name of
// kind (the schema's own word: a Kubernetes service type, "task" for
// Mesos) is now served.
func (m *Metrics) ObserveProgrammed(kind string, changed time.Time) {
	programming.WithLabelValues(m.plugin, kind).Observe(time.Since(changed).Seconds())
}
