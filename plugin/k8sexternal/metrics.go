package k8sexternal

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/schemadns/schemadns/plugin/pkg/replies"
)

// results counts the replies by result, in
// coredns_k8s_external_requests_total{result}: the results of kubeschema's
// and multicluster's counters, of which k8s_external has success, nodata,
// nxdomain, error (SERVFAIL before the backend has synced, among others)
// and fallthrough.
var results = replies.New(promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "requests_total",
	Help: "Queries answered, by result: success, nodata, nxdomain, fallthrough, error.",
}, []string{"result"}))
