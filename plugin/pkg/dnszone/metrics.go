package dnszone

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

// Metrics are what each schema plugin exports under its own name:
// coredns_<plugin>_requests_total, _synced and
// _dns_programming_duration_seconds.
type Metrics struct {
	plugin string
	// Replies counts the answers ServeDNS writes (requests by result).
	Replies *Counters
	// Synced keeps the synced gauge at 1 while any instance serves a
	// synced snapshot (reload-safe).
	Synced *watchcache.InstanceGauge
	// Programming is the plugin's own programming latency histogram.
	Programming *prometheus.HistogramVec
}

// NewMetrics registers a plugin's metrics; kinds says what its
// programming histogram's service_kind label tells apart. Call it once per
// process (a package variable), not per setup: a reload runs setup again.
func NewMetrics(pluginName, kinds string) *Metrics {
	requests := promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "requests_total",
		Help: "Queries answered, by result: success, nodata, nxdomain, refused, fallthrough, not_synced, error.",
	}, []string{"result"})
	synced := promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "synced",
		Help: "1 once the cache has synced and the first answers are built.",
	})
	programming := promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "dns_programming_duration_seconds",
		Help:    "Time from a change in the API to " + pluginName + " serving the new answer, by " + kinds + ".",
		Buckets: watchcache.LatencyBuckets,
	}, []string{"service_kind"})
	return &Metrics{plugin: pluginName, Replies: NewCounters(requests), Synced: watchcache.NewInstanceGauge(synced), Programming: programming}
}

// ObserveProgrammed records one change now served, in the plugin's
// histogram and the cache's cross-plugin one.
func (m *Metrics) ObserveProgrammed(kind watchcache.ServiceKind, ev watchcache.Event) {
	watchcache.ObserveProgrammed(m.plugin, kind, ev, m.Programming)
}
