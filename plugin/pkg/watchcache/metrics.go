package watchcache

import (
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
	informers = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "informers",
		Help: "Informers running, by resource: 1 per resource and connection however many plugins share it; more than expected after a reload is a leak.",
	}, []string{"resource"})
	events = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "events_total",
		Help: "Changes received from the API that change what DNS reads, each published to the plugins.",
	}, []string{"resource"})
	skipped = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: "watchcache", Name: "updates_skipped_total",
		Help: "Updates received from the API that change nothing DNS reads (annotations, status DNS ignores, managedFields, resyncs): no rebuild, no snapshot, no SOA serial change.",
	}, []string{"resource"})
)
