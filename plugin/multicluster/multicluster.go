// Package multicluster serves the Kubernetes Multicluster Services (MCS)
// DNS schema (clusterset.local) from the shared watch cache: the records of
// ServiceImports and of the EndpointSlices that member clusters export.
// Their facts are kept in the compact store (plugin/pkg/dnszone) when they
// change, and rendered by a lock-free lookup when a query comes.
package multicluster

import (
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

const pluginName = "multicluster"

// SchemaVersion is the MCS DNS schema this plugin implements.
const SchemaVersion = "1.0.0"

var log = clog.NewWithPlugin(pluginName)

// watched are the resources read: imports and their slices, and the
// local Services (with their slices) whose addresses keep their
// cluster-local PTR records.
const watched = kubesource.ServiceImports | kubesource.EndpointSlices | kubesource.Services

// Multicluster is the plugin handler: the shared zone server (ServeDNS,
// Transfer, Ready) with the MCS schema's records.
type Multicluster struct {
	dnszone.Server

	startupTimeout time.Duration
	cfg            kubesource.Config
	// clusterID is the cluster_id option: the local cluster's ID, lower
	// case; "" to learn it from the id.k8s.io ClusterProperty.
	clusterID string

	// learnt is the ID the ClusterProperty says, without cluster_id;
	// stopWatch ends its watch (both nil when there is none).
	learnt    *learntID
	stopWatch func()
}

// Name implements plugin.Handler.
func (m *Multicluster) Name() string { return pluginName }

// Other implements dnszone.Schema: the MCS schema has no names beyond the
// common grammar. (<clusterid>.<svc>.<ns>.svc, reserved by the
// specification, matches no endpoint's host name, so it never exists.)
func (m *Multicluster) Other(dnszone.Query, dnszone.Name) dnszone.Result { return dnszone.NXDomain }

// Follow implements dnszone.Schema: imports are never aliases.
func (m *Multicluster) Follow(dnszone.Query, string) (dnszone.Result, bool) {
	return dnszone.Result{}, false
}

// forwardZone is the first forward zone: PTR records point into it. Setup
// makes sure there is one.
func (m *Multicluster) forwardZone() string {
	for _, z := range m.Zones {
		if !dnsname.IsReverseZone(z) {
			return z
		}
	}
	return ""
}
