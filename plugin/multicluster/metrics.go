package multicluster

import (
	"sync"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
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

// synced counts the instances serving a synced snapshot, for syncedGauge:
// a reload starts the new instance before it shuts the old one down, so
// the gauge must follow the count, not the last instance to change.
var synced struct {
	sync.Mutex
	n int
}

func markSynced() {
	synced.Lock()
	defer synced.Unlock()
	synced.n++
	syncedGauge.Set(1)
}

func markStopped() {
	synced.Lock()
	defer synced.Unlock()
	if synced.n--; synced.n <= 0 {
		synced.n = 0
		syncedGauge.Set(0)
	}
}
