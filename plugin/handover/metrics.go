package handover

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	handedOver = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "sockets_total",
		Help: "UDP listeners taken out of the kernel's choice at shutdown because a proven successor served their address.",
	})
	refused = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "refused_total",
		Help: "UDP listeners kept at shutdown although another socket shared their address, by reason (no_key, uid, unverified); once per listener and reason.",
	}, []string{"reason"})
	takenBack = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "taken_back_total",
		Help: "Handed-over UDP listeners put back into the kernel's choice because their successor went away or stopped proving the key.",
	})
)
