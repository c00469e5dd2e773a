package watchcache

import (
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	syncedGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "synced",
		Help: "1 once the resource has been listed and is being watched.",
	}, []string{"resource"})
	apiReachable = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "api_reachable",
		Help: "1 while the last list or watch call of the resource reached the API server and no probe of its /readyz since has failed.",
	}, []string{"resource"})
	permissionDenied = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "permission_denied",
		Help: "1 while the API server refuses the verb (list, watch) on the resource to this server: fix the ClusterRole.",
	}, []string{"resource", "verb"})
	watchErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "errors_total",
		Help: "List and watch calls that failed.",
	}, []string{"resource"})
	relists = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "relists_total",
		Help: "Lists after the first: after a watch gap (410 Gone) or an outage.",
	}, []string{"resource"})
	events = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "events_total",
		Help: "Changes received from the API.",
	}, []string{"resource"})

	// ProgrammingLatency is the time from a change in the API to the
	// moment a plugin serves the new answer.
	ProgrammingLatency = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "dns_programming_duration_seconds",
		Help:    "Time from a change in the API to the new answer being served, by plugin and service kind.",
		Buckets: LatencyBuckets,
	}, []string{"plugin", "service_kind"})
)

// LatencyBuckets span 1 ms to about 30 s.
var LatencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 16)

// ObserveProgrammed records that plugin now serves the change ev of a
// service of kind sk, in the cache's histogram and in the plugin's own
// (labelled by service kind only), when it has one.
func ObserveProgrammed(plugin string, sk ServiceKind, ev Event, own *prometheus.HistogramVec) {
	d := time.Since(ev.Changed).Seconds()
	ProgrammingLatency.WithLabelValues(plugin, string(sk)).Observe(d)
	if own != nil {
		own.WithLabelValues(string(sk)).Observe(d)
	}
}
