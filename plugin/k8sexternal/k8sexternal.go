// Package k8sexternal is the k8s_external directive of this project's
// binary: the external IPs (spec.externalIPs, load balancer ingress) of
// Kubernetes services, and optionally headless endpoints, under a zone of
// their own, as CoreDNS's k8s_external serves them. CoreDNS's plugin reads
// the cluster only from the plugin named kubernetes; this one reads it
// from kubeschema or, when kubeschema is not in the server block, from
// the stock kubernetes plugin, through the methods both have.
package k8sexternal

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

const pluginName = "k8s_external"

// backend is what k8s_external reads of the cluster: a subset of the
// method set of CoreDNS's k8s_external Externaler, which the stock
// kubernetes plugin and kubeschema both implement.
type backend interface {
	// External returns the services and endpoints that a name of the
	// zone state.Zone matches, as msg.Services (Host an address or a
	// host name, Port, Key the record's name in msg.Path form), and the
	// rcode when there are none.
	External(state request.Request, headless bool) ([]msg.Service, int)
	// ExternalAddress returns the name server's address records.
	ExternalAddress(state request.Request, headless bool) []dns.RR
	// ExternalSerial returns the zone's SOA serial.
	ExternalSerial(zone string) uint32
}

// External is the k8s_external handler.
type External struct {
	Next  plugin.Handler
	Zones []string
	Fall  fall.F

	// apex is the label below the zone of the name server's own names
	// (ns1.<apex>.<zone>, hostmaster.<apex>.<zone>).
	apex string
	ttl  uint32
	// headless serves the endpoints of headless services.
	headless bool

	// backend is bound at start-up.
	backend  backend
	upstream *upstream.Upstream
}

// Name implements plugin.Handler.
func (e *External) Name() string { return pluginName }

// query is one question being answered, in the zone state.Zone.
type query struct {
	ctx   context.Context
	state request.Request
}

// ServeDNS implements plugin.Handler.
func (e *External) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 {
		return plugin.NextOrFailure(pluginName, e.Next, ctx, w, r)
	}
	state := request.Request{W: w, Req: r}
	state.Zone = plugin.Zones(e.Zones).Matches(state.Name())
	if state.Zone == "" {
		return plugin.NextOrFailure(pluginName, e.Next, ctx, w, r)
	}
	q := &query{ctx: ctx, state: state}
	if state.Name() == state.Zone || dns.IsSubDomain(e.apexName(state.Zone), state.Name()) {
		return e.write(q, e.serveApex(q))
	}
	svcs, rcode := e.backend.External(state, e.headless)
	if len(svcs) == 0 && rcode == dns.RcodeNameError && e.Fall.Through(state.Name()) {
		results.Fallthrough.Inc()
		return plugin.NextOrFailure(pluginName, e.Next, ctx, w, r)
	}
	if len(svcs) == 0 {
		return e.write(q, reply{rcode: rcode})
	}
	return e.write(q, e.records(q, svcs))
}

// reply is an answer before it is written.
type reply struct {
	rcode         int
	answer, extra []dns.RR
	truncated     bool
}

// write sends the reply: authoritative, with the zone's SOA in the
// Authority section when it has no answer (RFC 2308).
func (e *External) write(q *query, res reply) (int, error) {
	m := new(dns.Msg)
	m.SetReply(q.state.Req)
	m.Authoritative, m.Rcode, m.Truncated = true, res.rcode, res.truncated
	m.Answer, m.Extra = res.answer, res.extra
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{e.soa(q.state.Zone)}
	}
	results.Count(m.Rcode, len(m.Answer))
	if err := q.state.W.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// records renders the backend's services for the question's type; an
// empty answer (NODATA) for the other types.
func (e *External) records(q *query, svcs []msg.Service) reply {
	switch q.state.QType() {
	case dns.TypeA, dns.TypeAAAA:
		return e.addrs(q, svcs)
	case dns.TypeSRV:
		return e.srvs(q, svcs)
	case dns.TypePTR:
		return reply{answer: e.ptrs(q, svcs)}
	}
	return reply{}
}
