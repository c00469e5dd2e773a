// Package multicluster serves the Kubernetes Multicluster Services (MCS)
// DNS schema (clusterset.local) from the shared watch cache: the records of
// ServiceImports and of the EndpointSlices that member clusters export,
// precomputed when they change, answered by a lock-free lookup.
package multicluster

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/answer"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

const pluginName = "multicluster"

// SchemaVersion is the MCS DNS schema this plugin implements.
const SchemaVersion = "1.0.0"

var log = clog.NewWithPlugin(pluginName)

var errNotSynced = errors.New("multicluster: the cache has not synced with the API server yet")

// kinds are the resources watched: imports and their slices, and the
// local Services (with their slices) whose addresses keep their
// cluster-local PTR records.
const kinds = watchcache.ServiceImports | watchcache.EndpointSlices | watchcache.Services

// Multicluster is the plugin handler.
type Multicluster struct {
	Next plugin.Handler
	// Zones are every zone served, forward and reverse, lower case.
	Zones []string
	Fall  fall.F

	ttl            uint32
	startupTimeout time.Duration
	cfg            watchcache.Config
	// nsAddrs are the addresses of ns.dns.<zone>: where this server listens.
	nsAddrs []netip.Addr

	snap atomic.Pointer[snapshot]
	stop func()
}

// Name implements plugin.Handler.
func (m *Multicluster) Name() string { return pluginName }

// result is what a lookup found.
type result struct {
	rcode         int
	answer, extra []dns.RR
	// zone gives the SOA for negative answers.
	zone *zoneData
}

// ServeDNS implements plugin.Handler.
func (m *Multicluster) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 {
		return plugin.NextOrFailure(pluginName, m.Next, ctx, w, r)
	}
	q := r.Question[0]
	zi := m.zoneIndex(q.Name)
	if zi < 0 {
		if m.Next == nil {
			return m.refuse(w, r)
		}
		return plugin.NextOrFailure(pluginName, m.Next, ctx, w, r)
	}
	snap := m.snap.Load()
	if snap == nil {
		replies.NotSynced.Inc()
		return dns.RcodeServerFailure, errNotSynced
	}
	lower := strings.ToLower(q.Name)
	res := lookup(snap, snap.zones[zi], lower, q.Qtype)
	if res.rcode == dns.RcodeNameError && m.Fall.Through(q.Name) {
		replies.Fallthrough.Inc()
		return plugin.NextOrFailure(pluginName, m.Next, ctx, w, r)
	}
	reply := answer.Reply(r, lower, res.rcode, res.answer, res.extra, res.zone.negative)
	replies.Count(res.rcode, len(res.answer))
	if err := w.WriteMsg(reply); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// zoneIndex is the index in Zones of the zone of name, or -1.
func (m *Multicluster) zoneIndex(name string) int {
	best, bestLen := -1, -1
	for i, z := range m.Zones {
		if _, ok := dnsname.TrimZone(name, z); ok && len(z) > bestLen {
			best, bestLen = i, len(z)
		}
	}
	return best
}

// refuse answers a name outside our zones when there is no next plugin:
// we are not authoritative for it, which is not a server failure.
func (m *Multicluster) refuse(w dns.ResponseWriter, r *dns.Msg) (int, error) {
	reply := new(dns.Msg)
	reply.SetRcode(r, dns.RcodeRefused)
	replies.Refused.Inc()
	return dns.RcodeRefused, w.WriteMsg(reply)
}

// lookup answers one lower-case name in zone z.
func lookup(snap *snapshot, z *zoneData, lower string, qtype uint16) result {
	if z.reverse {
		return lookupReverse(snap, z, lower, qtype)
	}
	rest, _ := dnsname.TrimZone(lower, z.origin)
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
		if len(z.imports) == 0 {
			return nxdomain
		}
		return nodata
	case nameNamespace:
		if z.namespaces[p.namespace] == 0 {
			return nxdomain
		}
		return nodata
	case nameService, nameProto, namePort, nameHost:
		if r := z.imports[p.key]; r != nil {
			return importAnswer(z, r, p, qtype)
		}
	}
	// nameCluster, <clusterid>.<svc>.<ns>.svc, never exists.
	return nxdomain
}

// importAnswer answers a name of an existing import.
func importAnswer(z *zoneData, r *importRecords, p parsedName, qtype uint16) result {
	nxdomain := result{zone: z, rcode: dns.RcodeNameError}
	switch p.kind {
	case nameService:
		if qtype == dns.TypeSRV {
			return result{zone: z, answer: answer.Rotate(r.srv, &r.turn), extra: r.srvExtra}
		}
		return addrAnswer(z, qtype, r.a, r.aaaa, &r.turn, r.srv...)
	case nameHost:
		h := r.hosts[p.host]
		if h == nil {
			return nxdomain
		}
		return addrAnswer(z, qtype, h.a, h.aaaa, &r.turn)
	case nameProto:
		if !r.protos[p.proto] {
			return nxdomain
		}
		return result{zone: z}
	}
	pr := r.ports[p.port]
	if pr == nil {
		return nxdomain
	}
	if qtype != dns.TypeSRV && qtype != dns.TypeANY {
		return result{zone: z}
	}
	return result{zone: z, answer: answer.Rotate(pr.srv, &r.turn), extra: pr.extra}
}

// lookupReverse answers a PTR query in a reverse zone.
func lookupReverse(snap *snapshot, z *zoneData, lower string, qtype uint16) result {
	if lower == z.origin {
		return apexAnswer(z, qtype)
	}
	ip, ok := dnsname.ReverseAddr(lower)
	p := snap.ptr[ip]
	if !ok || p == nil {
		return result{zone: z, rcode: dns.RcodeNameError}
	}
	if qtype != dns.TypePTR && qtype != dns.TypeANY {
		return result{zone: z}
	}
	return result{zone: z, answer: []dns.RR{p}}
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
