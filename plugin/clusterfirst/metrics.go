package clusterfirst

import (
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Classes of a dropped query, the "class" label.
const (
	classCluster = "cluster" // in the cluster zones: dropped past the bound only
	classOther   = "other"   // outside them: dropped from the target on
)

var (
	droppedTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "dropped_total",
		Help: "UDP queries dropped without a reply under overload, by class of name (cluster, other).",
	}, []string{"server", "class"})
	// The gauges are the process's: every instance measures the same
	// runtime, so the last to sample writes them.
	queueDelay = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "queue_delay_seconds",
		Help: "The 90th percentile of how long goroutines waited to run in the last 10 ms.",
	})
	cpuBusy = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "cpu_busy_ratio",
		Help: "The CPU the process used in the last second, as a share of the CPU it may use (GOMAXPROCS, affinity, cgroup limit): nothing is shed under 0.9.",
	})
	episodes = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "shedding_episodes_total",
		Help: "Times shedding began: the queue delay stood over target for 100 ms while the process used the CPU it may.",
	})
	dropProbability = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "drop_probability",
		Help: "The probability that a UDP query is dropped now, by class of name (cluster, other).",
	}, []string{"class"})
)

// log is the plugin's logger: an episode of shedding begins and ends with a
// line.
var log = clog.NewWithPlugin(pluginName)

// Causes of a datagram the kernel dropped at a listener, the "reason" label.
const (
	reasonOverflow = "overflow" // the receive buffer was full
	reasonShed     = "shed"     // clusterfirst's filter was on (a full buffer's drops then count here too)
)

var listenerDrops = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace, Subsystem: pluginName, Name: "listener_drops_total",
	Help: "UDP datagrams the kernel dropped at the server's listeners before the server read them, by reason: overflow (the receive buffer full) or shed (clusterfirst's random drop past the bound, on while the cluster names are shed).",
}, []string{"reason"})

// The two series of listenerDrops, looked up once.
var (
	listenerDropsShed     = listenerDrops.WithLabelValues(reasonShed)
	listenerDropsOverflow = listenerDrops.WithLabelValues(reasonOverflow)
)
