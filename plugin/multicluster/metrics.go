package multicluster

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

var (
	requests = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "requests_total",
		Help: "Queries answered, by result: success, nodata, nxdomain, refused, fallthrough, not_synced, error.",
	}, []string{"result"})
	syncedGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "synced",
		Help: "1 once the cache has synced and the first answers are built.",
	})
	programming = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "dns_programming_duration_seconds",
		Help:    "Time from a change in the API to multicluster serving the new answer, by import kind.",
		Buckets: watchcache.LatencyBuckets,
	}, []string{"service_kind"})
)

// observeProgrammed records one change now served, in multicluster's
// histogram and the cache's cross-plugin one.
func observeProgrammed(kind watchcache.ServiceKind, ev watchcache.Event) {
	watchcache.ObserveProgrammed(pluginName, kind, ev, programming)
}

// replies counts the answers ServeDNS writes (requests by result).
var replies = dnszone.NewCounters(requests)

// syncedInstances keeps syncedGauge at 1 while any instance serves a synced snapshot (reload-safe).
var syncedInstances = watchcache.NewInstanceGauge(syncedGauge)
