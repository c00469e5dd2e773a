// Package kubeschema serves the Kubernetes DNS schema (cluster.local) from
// the shared watch cache: a drop-in for CoreDNS's kubernetes plugin whose
// answers are precomputed when the cluster changes, not when a query comes.
package kubeschema

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/answer"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
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
	ttl                uint32
	namespaces         map[string]bool
	namespaceLabels    labels.Selector
	pods               podMode
	endpointPodNames   bool
	noEndpoints        bool
	ignoreEmptyService bool
	startupTimeout     time.Duration
}

// Kubeschema is the plugin handler.
type Kubeschema struct {
	Next plugin.Handler
	// Zones are every zone served, forward and reverse, lower case.
	Zones []string
	Fall  fall.F

	opts options
	cfg  watchcache.Config
	// nsAddrs are the addresses of ns.dns.<zone>: where this server listens.
	nsAddrs  []netip.Addr
	upstream *upstream.Upstream

	snap atomic.Pointer[snapshot]
	// data is the cache the snapshot is built from (pods verified reads it
	// at query time).
	data source
	stop func()
}

// Name implements plugin.Handler.
func (k *Kubeschema) Name() string { return pluginName }

// kinds are the resources the options need watched.
func (k *Kubeschema) kinds() watchcache.Kind {
	kinds := watchcache.Services
	if !k.opts.noEndpoints {
		kinds |= watchcache.EndpointSlices
	}
	if k.opts.namespaceLabels != nil {
		kinds |= watchcache.Namespaces
	}
	if k.opts.pods == podsVerified {
		kinds |= watchcache.Pods
	}
	return kinds
}

// result is what a lookup found.
type result struct {
	rcode         int
	answer, extra []dns.RR
	// zone gives the SOA for negative answers.
	zone *zoneData
}

// ServeDNS implements plugin.Handler.
func (k *Kubeschema) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 {
		return plugin.NextOrFailure(pluginName, k.Next, ctx, w, r)
	}
	q := r.Question[0]
	zi, restLen := k.zoneIndex(q.Name)
	if zi < 0 {
		if k.Next == nil {
			return k.refuse(w, r)
		}
		return plugin.NextOrFailure(pluginName, k.Next, ctx, w, r)
	}
	snap := k.snap.Load()
	if snap == nil {
		replies.NotSynced.Inc()
		return dns.RcodeServerFailure, errNotSynced
	}
	lower := strings.ToLower(q.Name)
	var rest string
	if len(lower) == len(q.Name) {
		rest = lower[:restLen]
	} else { // lower-casing changed the length (not ASCII): match again
		rest, _ = dnsname.TrimZone(lower, k.Zones[zi])
	}
	ans := k.lookup(ctx, snap, snap.zones[zi], lower, rest, q.Qtype, w, r, 0)
	if ans.rcode == dns.RcodeNameError && k.Fall.Through(q.Name) {
		replies.Fallthrough.Inc()
		return plugin.NextOrFailure(pluginName, k.Next, ctx, w, r)
	}
	return k.write(w, r, lower, ans)
}

// zoneIndex is the index in Zones of the zone of name, or -1, and the
// length of what comes before the zone (the lookup's rest, so it need not
// match the zone again).
func (k *Kubeschema) zoneIndex(name string) (zi, restLen int) {
	zi, bestLen := -1, -1
	for i, z := range k.Zones {
		if rest, ok := dnsname.TrimZone(name, z); ok && len(z) > bestLen {
			zi, bestLen, restLen = i, len(z), len(rest)
		}
	}
	return zi, restLen
}

// write sends the reply: authoritative, the question's case repeated, the
// SOA in the Authority section of negative answers (RFC 2308).
func (k *Kubeschema) write(w dns.ResponseWriter, r *dns.Msg, lower string, ans result) (int, error) {
	m := answer.Reply(r, lower, ans.rcode, ans.answer, ans.extra, ans.zone.negative)
	replies.Count(ans.rcode, len(ans.answer))
	if err := w.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// refuse answers a name outside our zones when there is no next plugin:
// we are not authoritative for it, which is not a server failure.
func (k *Kubeschema) refuse(w dns.ResponseWriter, r *dns.Msg) (int, error) {
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeRefused)
	replies.Refused.Inc()
	return dns.RcodeRefused, w.WriteMsg(m)
}

// lookup answers one name in zone z: lower is the name, rest the part of
// it before the zone. depth counts CNAME hops.
func (k *Kubeschema) lookup(ctx context.Context, snap *snapshot, z *zoneData, lower, rest string, qtype uint16, w dns.ResponseWriter, r *dns.Msg, depth int) result {
	if z.reverse {
		return k.lookupReverse(snap, z, lower, qtype)
	}
	p := parseName(rest)
	nodata := result{zone: z}
	nxdomain := result{zone: z, rcode: dns.RcodeNameError}
	switch p.kind {
	case nameApex:
		return apexAnswer(z, qtype)
	case nameVersion:
		return pick(z, qtype, dns.TypeTXT, z.version)
	case nameDNSLabel:
		return nodata
	case nameNS:
		return addrAnswer(z, qtype, z.nsA, z.nsAAAA, nil)
	case nameSvcLabel:
		if len(z.services) == 0 {
			return nxdomain
		}
		return nodata
	case nameNamespace:
		if len(z.services[p.namespace]) == 0 {
			return nxdomain
		}
		return nodata
	case nameService, nameHost, nameProto, namePort:
		svc := z.services[p.namespace][p.service]
		if svc == nil {
			return nxdomain
		}
		return k.serviceAnswer(ctx, snap, z, svc, p, qtype, w, r, depth)
	case namePodLabel, namePodNS:
		if k.opts.pods == podsDisabled {
			return nxdomain
		}
		return nodata
	case namePod:
		return k.podAnswer(z, p, lower, qtype)
	}
	return nxdomain
}

func (k *Kubeschema) serviceAnswer(ctx context.Context, snap *snapshot, z *zoneData, svc *serviceRecords, p parsedName, qtype uint16, w dns.ResponseWriter, r *dns.Msg, depth int) result {
	switch p.kind {
	case nameService:
		if svc.cname != nil {
			return k.cnameAnswer(ctx, snap, z, svc.cname, qtype, w, r, depth)
		}
		if qtype == dns.TypeSRV {
			return result{zone: z, answer: answer.Rotate(svc.srv, &svc.turn), extra: svc.srvExtra}
		}
		return addrAnswer(z, qtype, svc.a, svc.aaaa, &svc.turn, svc.srv...)
	case nameHost:
		h := svc.hosts[p.host]
		if h == nil {
			return result{zone: z, rcode: dns.RcodeNameError}
		}
		return addrAnswer(z, qtype, h.a, h.aaaa, &svc.turn)
	case nameProto:
		if !svc.hasProto(p.proto) {
			return result{zone: z, rcode: dns.RcodeNameError}
		}
		return result{zone: z}
	}
	pr := svc.port(p.port)
	if pr == nil {
		return result{zone: z, rcode: dns.RcodeNameError}
	}
	if qtype != dns.TypeSRV && qtype != dns.TypeANY {
		return result{zone: z}
	}
	return result{zone: z, answer: answer.Rotate(pr.srv, &svc.turn), extra: pr.extra}
}

// cnameAnswer answers an ExternalName service: the CNAME, then the
// target's records: from our own data when the target is in a zone we
// serve, else through the server's chain (upstream).
func (k *Kubeschema) cnameAnswer(ctx context.Context, snap *snapshot, z *zoneData, cname *dns.CNAME, qtype uint16, w dns.ResponseWriter, r *dns.Msg, depth int) result {
	out := result{zone: z, answer: []dns.RR{cname}}
	if qtype == dns.TypeCNAME || depth >= maxCNAMEHops {
		return out
	}
	if zi, restLen := k.zoneIndex(cname.Target); zi >= 0 {
		next := k.lookup(ctx, snap, snap.zones[zi], cname.Target, cname.Target[:restLen], qtype, w, r, depth+1)
		out.answer = append(out.answer, next.answer...)
		out.extra, out.rcode = next.extra, next.rcode
		return out
	}
	if k.upstream == nil || w == nil {
		return out
	}
	state := request.Request{W: w, Req: r}
	m, err := k.upstream.Lookup(ctx, state, cname.Target, qtype)
	// A failed lookup (REFUSED when nothing in the chain resolves the
	// target, SERVFAIL) is not the answer's rcode: NOERROR or NXDOMAIN are.
	if err != nil || m == nil || (m.Rcode != dns.RcodeSuccess && m.Rcode != dns.RcodeNameError) {
		return out // the CNAME alone: the client's resolver can follow it
	}
	out.answer = append(out.answer, m.Answer...)
	out.rcode = m.Rcode
	return out
}

// maxCNAMEHops bounds CNAME chains between our own ExternalName services.
const maxCNAMEHops = 8

// podAnswer answers <dashed-ip>.<ns>.pod.<zone> by the pods mode.
func (k *Kubeschema) podAnswer(z *zoneData, p parsedName, lower string, qtype uint16) result {
	switch k.opts.pods {
	case podsDisabled:
		return result{zone: z, rcode: dns.RcodeNameError}
	case podsVerified:
		if !k.podExists(p.namespace, p.podAddr) {
			return result{zone: z, rcode: dns.RcodeNameError}
		}
	}
	var a, aaaa []dns.RR
	if p.podAddr.Is4() {
		a = []dns.RR{&dns.A{Hdr: answer.Hdr(lower, dns.TypeA, k.opts.ttl), A: p.podAddr.AsSlice()}}
	} else {
		aaaa = []dns.RR{&dns.AAAA{Hdr: answer.Hdr(lower, dns.TypeAAAA, k.opts.ttl), AAAA: p.podAddr.AsSlice()}}
	}
	return addrAnswer(z, qtype, a, aaaa, nil)
}

func (k *Kubeschema) podExists(ns string, a netip.Addr) bool {
	for _, pod := range k.data.PodsByIP(a) {
		if pod.Namespace() == ns {
			return true
		}
	}
	return false
}

// lookupReverse answers a PTR query in a reverse zone.
func (k *Kubeschema) lookupReverse(snap *snapshot, z *zoneData, lower string, qtype uint16) result {
	if lower == z.origin {
		return apexAnswer(z, qtype)
	}
	ip, ok := dnsname.ReverseAddr(lower)
	recs := snap.ptrOf(ip)
	if !ok || len(recs) == 0 {
		return result{zone: z, rcode: dns.RcodeNameError}
	}
	if qtype != dns.TypePTR && qtype != dns.TypeANY {
		return result{zone: z}
	}
	out := make([]dns.RR, len(recs))
	for i, p := range recs {
		out[i] = p.rr
	}
	return result{zone: z, answer: out}
}

// apexAnswer answers the zone apex: SOA and NS.
func apexAnswer(z *zoneData, qtype uint16) result {
	ans, extra := answer.Apex(qtype, z.soa, z.ns, z.nsA, z.nsAAAA)
	return result{zone: z, answer: ans, extra: extra}
}

// pick answers rrs for want (or ANY), NODATA for any other type.
func pick(z *zoneData, qtype, want uint16, rrs []dns.RR) result {
	return result{zone: z, answer: answer.ForType(qtype, want, rrs)}
}

// addrAnswer answers A, AAAA or ANY from address records; other types are
// NODATA. more are added for ANY (the SRV records of the name).
func addrAnswer(z *zoneData, qtype uint16, a, aaaa []dns.RR, turn *atomic.Uint32, more ...dns.RR) result {
	return result{zone: z, answer: answer.Addrs(qtype, a, aaaa, turn, more...)}
}
