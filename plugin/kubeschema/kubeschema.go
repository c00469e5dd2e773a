// Package kubeschema serves the Kubernetes DNS schema (cluster.local) from
// the shared watch cache: a drop-in for CoreDNS's kubernetes plugin. The
// facts of each service are kept in a compact store (plugin/pkg/dnszone)
// updated when the cluster changes; the records are rendered from them
// when a query comes.
package kubeschema

import (
	"net/netip"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	"k8s.io/apimachinery/pkg/labels"
)

const pluginName = "kubeschema"

// SchemaVersion is the Kubernetes DNS schema this plugin implements.
const SchemaVersion = "1.1.0"

var log = clog.NewWithPlugin(pluginName)

// podMode is the `pods` option.
type podMode uint8

const (
	podsDisabled podMode = iota
	podsInsecure
	podsVerified
)

// options are the parsed Corefile options that shape the records.
type options struct {
	namespaces         map[string]bool
	namespaceLabels    labels.Selector
	pods               podMode
	endpointPodNames   bool
	noEndpoints        bool
	ignoreEmptyService bool
	// zonal keeps each endpoint's topology zone for zonal names.
	zonal          bool
	startupTimeout time.Duration
	reverse        reverseRanges
}

// Kubeschema is the plugin handler: the shared zone server (ServeDNS,
// Transfer, Ready) with the schema's own names.
type Kubeschema struct {
	dnszone.Server

	opts     options
	cfg      kubesource.Config
	upstream *upstream.Upstream

	// data is the cache the snapshot is built from (pods verified reads it
	// at query time).
	data cacheReader
	// rangesSet: the owned reverse ranges were set (reverse_cidrs); owned
	// by the builder's goroutine.
	rangesSet bool
}

// Name implements plugin.Handler.
func (k *Kubeschema) Name() string { return pluginName }

// resources are those the options need watched.
func (k *Kubeschema) resources() kubesource.Resources {
	watched := kubesource.Services
	if !k.opts.noEndpoints {
		watched |= kubesource.EndpointSlices
	}
	if k.opts.namespaceLabels != nil {
		watched |= kubesource.Namespaces
	}
	if k.opts.pods == podsVerified {
		watched |= kubesource.Pods
	}
	if k.opts.reverse.auto {
		watched |= kubesource.ServiceCIDRs
	}
	return watched
}

// Other implements dnszone.Schema: the pod names, <dashed-ip>.<ns>.pod.<zone>.
func (k *Kubeschema) Other(q dnszone.Query, n dnszone.Name) dnszone.Result {
	if n.Top != "pod" {
		return dnszone.NXDomain
	}
	p := parsePod(n.Labels)
	switch {
	case p.kind == nameNone:
		return dnszone.NXDomain
	case k.opts.pods == podsDisabled:
		return dnszone.NXDomain
	case p.kind != namePod:
		return dnszone.Result{} // pod.<zone> and <ns>.pod.<zone>: empty non-terminals
	case k.opts.pods == podsVerified && !k.podExists(p.namespace, p.addr):
		return dnszone.NXDomain
	}
	if (q.Qtype == dns.TypeA && p.addr.Is4()) || (q.Qtype == dns.TypeAAAA && p.addr.Is6()) || q.Qtype == dns.TypeANY {
		return dnszone.Result{Answer: dnszone.AddrAnswer(q.Owner, p.addr, k.TTL)}
	}
	return dnszone.Result{}
}

func (k *Kubeschema) podExists(ns string, a netip.Addr) bool {
	for _, pod := range k.data.PodsByIP(a) {
		if pod.Namespace() == ns {
			return true
		}
	}
	return false
}

// Follow implements dnszone.Schema: an ExternalName target outside our
// zones is resolved through the server's chain (upstream).
func (k *Kubeschema) Follow(q dnszone.Query, target string) (dnszone.Result, bool) {
	if k.upstream == nil || q.W == nil {
		return dnszone.Result{}, false
	}
	m, err := k.upstream.Lookup(q.Ctx, request.Request{W: q.W, Req: q.Req}, target, q.Qtype)
	// A failed lookup (REFUSED when nothing in the chain resolves the
	// target, SERVFAIL) is not the answer's rcode: NOERROR or NXDOMAIN are.
	if err != nil || m == nil || (m.Rcode != dns.RcodeSuccess && m.Rcode != dns.RcodeNameError) {
		return dnszone.Result{}, false // the CNAME alone: the client's resolver can follow it
	}
	return dnszone.Result{Rcode: m.Rcode, Answer: m.Answer}, true
}
