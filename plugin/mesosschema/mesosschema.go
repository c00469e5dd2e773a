// Package mesosschema serves the Mesos-DNS naming scheme (task.framework.mesos,
// SRV records, leader, master and slave names) from the leading Mesos
// master's state, polled over HTTP: a drop-in for Mesos-DNS on the same
// serving core as the Kubernetes schemas (plugin/pkg/dnszone, in its
// record-set model). Each poll's state is turned into names with their
// records; only the names that changed are swapped into a new snapshot,
// and a state that changes nothing publishes nothing.
package mesosschema

import (
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
)

const pluginName = "mesosschema"

var log = clog.NewWithPlugin(pluginName)

// Mesosschema is the plugin handler: the shared zone server (ServeDNS,
// Transfer, Ready) over the records of the master's state.
type Mesosschema struct {
	dnszone.Server

	// master is how to reach the masters; gen how a state becomes records.
	master mesosmaster.Config
	gen    genOptions
	// refresh is the poll interval; startupTimeout how long start-up waits
	// for the first state.
	refresh, startupTimeout time.Duration
	// httpAddr is where the Mesos-DNS HTTP interface listens ("" for
	// none); keepState keeps the last state for its /v1/enumerate.
	httpAddr  string
	keepState bool

	poller *poller
	http   *httpHandle
	// enum is /v1/enumerate's answer for the state kept; enumMu lets one
	// request build it.
	enum   atomic.Pointer[enumCache]
	enumMu sync.Mutex
	// owner is the Corefile's instance (caddy's context), which the HTTP
	// interface's listener tells apart from a reload's successor.
	owner any
}

// Name implements plugin.Handler.
func (m *Mesosschema) Name() string { return pluginName }

// Other implements dnszone.Schema: the record-set grammar leaves no name
// to the schema.
func (m *Mesosschema) Other(dnszone.Query, dnszone.Name) dnszone.Result { return dnszone.NXDomain }

// Follow implements dnszone.Schema: there are no aliases.
func (m *Mesosschema) Follow(dnszone.Query, string) (dnszone.Result, bool) {
	return dnszone.Result{}, false
}

// setCounts exports what the latest state holds.
func (m *Mesosschema) setCounts(g *generated) {
	metrics.tasks.Set(float64(g.tasks))
	metrics.skippedTasks.Set(float64(g.skipped))
	metrics.names.Set(float64(len(g.sets)))
}
