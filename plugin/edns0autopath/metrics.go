package edns0autopath

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Sources of the search paths, the "source" label.
const (
	sourceOption = "option" // the SearchPaths option
	sourceName   = "name"   // derived from a search.<ns>.<suffix>.<autopath> name
)

// Outcomes of an expansion, the "outcome" label.
const (
	outcomeFound    = "found"    // a path gave an answer that is not NXDOMAIN
	outcomeNXDOMAIN = "nxdomain" // every path gave NXDOMAIN
	outcomeError    = "error"    // a path gave SERVFAIL or another error: the search stopped
	outcomeFormErr  = "formerr"  // the option or a joined name broke a limit
)

var (
	expansions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "expansions_total",
		Help: "Queries expanded over search paths, by source of the paths (option, name) and outcome (found, nxdomain, error, formerr).",
	}, []string{"server", "source", "outcome"})
	subqueries = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "subqueries",
		Help:    "Queries sent down the chain per expansion, by source of the paths.",
		Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64},
	}, []string{"server", "source"})
	fallthroughs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace, Subsystem: pluginName, Name: "fallthroughs_total",
		Help: "Search-domain names whose schema paths all gave NXDOMAIN, so that the base name was looked up as it is.",
	}, []string{"server"})
)
