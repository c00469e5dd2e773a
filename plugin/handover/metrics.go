package handover

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var handedOver = promauto.NewCounter(prometheus.CounterOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "sockets_total",
	Help: "UDP listeners taken out of the kernel's choice at shutdown because another process served their address.",
})
