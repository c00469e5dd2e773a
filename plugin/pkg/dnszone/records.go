package dnszone

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"
)

// The record-set model: for schemas whose names are not Kubernetes
// services (Mesos), each name is stored whole, with its own addresses and
// SRV records (Facts of kind Records, keyed by the name below the zone),
// and the RecordNames grammar looks a question's name up as it is. The
// snapshot, its PTR index, rotation, rendering in one block, negative
// answers, transfers and metrics are the same as the services'.

// SRVRecord is one SRV record of a Records name: its target is another
// name of the same snapshot (below the zone), whose addresses go in the
// additional section.
type SRVRecord struct {
	Target           string
	Port             uint16
	Priority, Weight uint16
}

// NewRecords is the name key (lower case, below the zone, no trailing
// dot) with its own addresses (A and AAAA, each once) and SRV records
// (each once). ptr says which addresses have their PTR record point to
// this name (nil: none; AllPTR: every one): an address should have its
// PTR from one name only, the one that names it alone (a task instance,
// not the task's shared name).
func NewRecords(key string, addrs []netip.Addr, srvs []SRVRecord, ptr func(netip.Addr) bool) *Facts {
	eps := make([]EndpointFacts, len(addrs))
	for i, a := range addrs {
		eps[i] = NewEndpoint(a, "", 0, ptr != nil && ptr(a.Unmap()))
	}
	s := &Facts{key: key, kind: Records, groups: defaultGroups}
	s.setEndpoints(uniqueAddrs(eps))
	if len(srvs) > 0 {
		s.rare = &rareFacts{srvs: sortedSRVs(srvs)}
	}
	return s
}

// AllPTR gives every address of a record set its PTR record.
func AllPTR(netip.Addr) bool { return true }

// uniqueAddrs drops repeated addresses: a name's A records form a set.
func uniqueAddrs(eps []EndpointFacts) []EndpointFacts {
	slices.SortFunc(eps, func(a, b EndpointFacts) int { return a.addr.Compare(b.addr) })
	return slices.CompactFunc(eps, func(a, b EndpointFacts) bool { return a.addr == b.addr })
}

// sortedSRVs is srvs in target, port order, each record once.
func sortedSRVs(srvs []SRVRecord) []SRVRecord {
	out := slices.Clone(srvs)
	slices.SortFunc(out, func(a, b SRVRecord) int {
		return cmp.Or(strings.Compare(a.Target, b.Target), cmp.Compare(a.Port, b.Port),
			cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Weight, b.Weight))
	})
	return slices.Clip(slices.Compact(out))
}

// SRVs are the SRV records of a Records name (nil for other kinds).
func (s *Facts) SRVs() []SRVRecord {
	if s.kind != Records || s.rare == nil {
		return nil
	}
	return s.rare.srvs
}

// Equal tells whether two record sets have the same name and records, so
// that a source that rebuilds every name from a new state changes only
// those that differ. For Records facts only.
func (s *Facts) Equal(o *Facts) bool {
	if s.kind != Records || o.kind != Records || s.key != o.key || len(s.endpoints) != len(o.endpoints) {
		return false
	}
	for i := range s.endpoints {
		if s.endpoints[i] != o.endpoints[i] {
			return false
		}
	}
	return slices.Equal(s.SRVs(), o.SRVs())
}

// lookupRecord answers a name of a forward zone by the RecordNames
// grammar: rest is the name below the zone, lower case.
//
//go:noinline
func (srv *Server) lookupRecord(q *Query, rest string) Result {
	if rest == "" {
		return srv.apex(q)
	}
	set := q.Snap.Service(rest)
	if set == nil {
		if q.Snap.hasParent(rest) {
			return Result{} // an empty non-terminal: NODATA, not NXDOMAIN
		}
		return NXDomain
	}
	switch q.Qtype {
	case dns.TypeA, dns.TypeAAAA:
		return Result{Answer: q.addrsFor(set, all(set), srv.TTL)}
	case dns.TypeSRV:
		return srv.recordSRVs(q, set, true)
	case dns.TypeANY:
		addrs := q.addrs(set, all(set), nil, q.Owner, srv.TTL)
		return Result{Answer: append(addrs, srv.recordSRVs(q, set, false).Answer...)}
	}
	return Result{}
}

// recordSRVs renders the SRV records of set, rotated, and (extras) each
// target's addresses once as additional records, in one block.
func (srv *Server) recordSRVs(q *Query, set *Facts, extras bool) Result {
	srvs := set.SRVs()
	if len(srvs) == 0 {
		return Result{}
	}
	zone := srv.Zones[q.Zone]
	text, naddr := 0, 0
	for i, r := range srvs {
		if i > 0 && r.Target == srvs[i-1].Target {
			continue // one name, one text and one set of addresses
		}
		text += len(r.Target) + 1 + len(zone)
		if t := q.Snap.Service(r.Target); t != nil && extras {
			naddr += len(t.endpoints)
		}
	}
	var b block // filled in place (see addrBlock)
	b.alloc(&blockShape{rr: len(srvs) + naddr, addr: naddr, srv: len(srvs), text: text})
	answer, extra := b.rr[:len(srvs):len(srvs)], b.rr[len(srvs):]
	start := rotation(&set.turn, len(srvs))
	name, x := "", 0
	for i, r := range srvs {
		if i == 0 || r.Target != srvs[i-1].Target {
			name = b.targetName(r.Target, zone)
			x = b.targetAddrs(q.Snap.Service(r.Target), name, x, extras, srv.TTL)
		}
		rec := &b.srv[i]
		setHdr(&rec.Hdr, q.Owner, dns.TypeSRV, srv.TTL)
		rec.Priority, rec.Weight, rec.Port, rec.Target = r.Priority, r.Weight, r.Port, name
		answer[(i-start+len(srvs))%len(srvs)] = rec
	}
	return Result{Answer: answer, Extra: extra[:x]}
}

// targetName writes "<target>.<zone>" in b's text.
func (b *block) targetName(target, zone string) string {
	start := len(b.text)
	b.text = append(append(append(b.text, target...), '.'), zone...)
	return b.name(start)
}

// targetAddrs renders t's addresses owned by name as additional records
// from x on, when extras; it returns where the next go.
func (b *block) targetAddrs(t *Facts, name string, x int, extras bool, ttl uint32) int {
	if t == nil || !extras {
		return x
	}
	for i := range t.endpoints {
		b.rr[len(b.srv)+x] = b.addrRecord(x, &t.endpoints[i], name, ttl)
		x++
	}
	return x
}

// recordSetRecords lists every record of a Records name under zone, for a
// transfer: its addresses, then its SRV records.
func (srv *Server) recordSetRecords(set *Facts, zone string) []dns.RR {
	name := set.key + "." + zone
	out := addrBlock(set, all(set), 0, name, srv.TTL, "")
	for _, r := range set.SRVs() {
		out = append(out, &dns.SRV{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: srv.TTL},
			Priority: r.Priority, Weight: r.Weight, Port: r.Port, Target: r.Target + "." + zone})
	}
	return out
}

// rotation is where an answer of n records that turn rotates starts: one
// further at each answer.
func rotation(turn *atomic.Uint32, n int) int {
	if n < 2 {
		return 0
	}
	return int(turn.Add(1) % uint32(n))
}
