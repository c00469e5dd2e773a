package mesosschema

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
)

// metrics are registered once per process: a reload runs setup again.
var metrics = newMetrics()

// mesosMetrics are the schema's metrics (dnszone's: requests by result,
// synced, the programming latency) and the polls'.
type mesosMetrics struct {
	*dnszone.Metrics
	// reachable is 1 while the last poll got a good state.
	reachable prometheus.Gauge
	// polls counts polls by result: changed (a new state, offered),
	// unchanged (the same bytes as the last one: not decoded), held (a
	// state without agents, see holdPolls), error.
	polls *prometheus.CounterVec
	// pollSeconds times each poll: the fetch, and the decode of a new
	// state.
	pollSeconds prometheus.Histogram
	// unchangedStates counts new states that changed no record: nothing
	// published, the serial kept.
	unchangedStates prometheus.Counter
	// stateBytes is the size of the last state decoded.
	stateBytes prometheus.Gauge
	// tasks, skippedTasks and names describe the last state read.
	tasks, skippedTasks, names prometheus.Gauge
	// httpRefused counts the HTTP interface's requests answered 503
	// because as many as it serves at once were under way.
	httpRefused prometheus.Counter
	// redirectsRefused counts redirects (and states' leaders) naming a
	// host that is not a known master: not followed.
	redirectsRefused prometheus.Counter
}

func newMetrics() *mesosMetrics {
	gauge := func(name, help string) prometheus.Gauge {
		return promauto.NewGauge(prometheus.GaugeOpts{Namespace: plugin.Namespace, Subsystem: pluginName, Name: name, Help: help})
	}
	return &mesosMetrics{
		Metrics:   dnszone.NewMetrics(pluginName),
		reachable: gauge("master_reachable", "1 while the last poll got a good state from a master, 0 while it gets none (the last good state is served)."),
		polls: promauto.NewCounterVec(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: pluginName, Name: "polls_total",
			Help: "Polls of the leading master's state, by result: changed, unchanged (same bytes, not decoded), held (no agent listed), error."},
			[]string{"result"}),
		pollSeconds: promauto.NewHistogram(prometheus.HistogramOpts{Namespace: plugin.Namespace, Subsystem: pluginName, Name: "poll_duration_seconds",
			Help: "Time of one poll: fetching the state (following the leader) and decoding a new one.",
			// 1 ms to about 30 s.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		unchangedStates: promauto.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: pluginName, Name: "states_unchanged_total",
			Help: "New states that changed no record: nothing was published, the SOA serial kept."}),
		stateBytes:   gauge("state_bytes", "Size of the last state decoded, in bytes."),
		tasks:        gauge("tasks", "Running tasks served from the last state."),
		skippedTasks: gauge("tasks_skipped", "Running tasks of the last state that get no records: on an agent the state does not list, or with no valid name."),
		names:        gauge("names", "Names served from the last state."),
		httpRefused: promauto.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: pluginName, Name: "http_requests_refused_total",
			Help: "Requests to the Mesos-DNS HTTP interface answered 503 because as many requests as it serves at once were under way."}),
		redirectsRefused: promauto.NewCounter(prometheus.CounterOpts{Namespace: plugin.Namespace, Subsystem: pluginName, Name: "redirects_refused_total",
			Help: "Redirects, and leaders named by a state, to a host that is neither a configured master nor ZooKeeper's leader: not followed, no credentials sent."}),
	}
}
