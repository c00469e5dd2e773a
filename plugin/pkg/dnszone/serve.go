package dnszone

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/replies"
)

// Server is the query path of a schema plugin: zone match, REFUSED for
// names outside its zones with nothing after it, SERVFAIL before the first
// snapshot, fallthrough on NXDOMAIN, the answers of the common grammar, and
// the reply.
type Server struct {
	// Plugin names the plugin, for errors.
	Plugin string
	// Zones are every zone served, forward and reverse, lower case.
	Zones []string
	Fall  fall.F
	Next  plugin.Handler
	// TTL of every record.
	TTL uint32
	// NSAddrs are the addresses of ns.dns.<zone>: where the server listens.
	NSAddrs []netip.Addr
	// Version is the schema version dns-version.<zone> answers.
	Version string
	Schema  Schema
	Replies *replies.Counters
	// Zonal serves the zone-scoped names of headless services
	// (<zone>.pin._zone.<svc>.<ns>.svc.<zone>, and prefer).
	Zonal bool
	// Names is the grammar of the forward zones: the Kubernetes services'
	// (the default, svcname.go) or a record set per name (records.go).
	Names NameModel
	// SOA overrides the apex's names and timers; its zero fields keep
	// the defaults.
	SOA SOAFields

	snap atomic.Pointer[Snapshot]
	// owned are the address ranges whose reverse names are answered with
	// authority even when fallthrough would pass them on (reverse_cidrs).
	owned atomic.Pointer[[]netip.Prefix]
	// zoneNames are the SOA's names by zone, made on first use (Zones are
	// set by then).
	namesOnce sync.Once
	zoneNames []zoneNames
	// stop ends the cache consumer Start started.
	stop func()
}

// ErrNotSynced is ServeDNS's error before the first snapshot.
var ErrNotSynced = errors.New("the cache has not synced with the API server yet")

// Publish makes s the snapshot queries read.
func (srv *Server) Publish(s *Snapshot) { srv.snap.Store(s) }

// Snapshot is the snapshot queries read now; nil before the first.
func (srv *Server) Snapshot() *Snapshot { return srv.snap.Load() }

// Ready implements ready.Readiness: ready once the first snapshot from a
// synced cache is being served.
func (srv *Server) Ready() bool { return srv.snap.Load() != nil }

// ServedZones are the zones the plugin answers from its snapshot, forward
// and reverse: the cluster zones that clusterfirst keeps serving under
// overload when its stanza names none. A copy: the caller may keep it.
func (srv *Server) ServedZones() []string { return slices.Clone(srv.Zones) }

// Query is one question being answered.
type Query struct {
	Ctx context.Context
	W   dns.ResponseWriter
	Req *dns.Msg
	// Snap is the snapshot the whole answer is read from.
	Snap *Snapshot
	// Zone is the index in Zones of the question's zone.
	Zone  int
	Qtype uint16
	// Owner is the owner of the records of the name asked: the question's
	// name as asked (0x20 case randomisation), or a CNAME target.
	Owner string
	// Lower is the name in lower case.
	Lower string
	depth int
	// via is the owner of the alias this query follows (its CNAME points
	// to Owner), or "". A renderer that puts that CNAME first in its own
	// block, so the answer needs no block of its own, sets led.
	via string
	led bool
}

// Result is what a lookup found. The Authority section (the zone's SOA
// for a negative answer) is added by the reply.
type Result struct {
	Rcode         int
	Answer, Extra []dns.RR
}

// NXDomain is the negative answer for a name that does not exist.
var NXDomain = Result{Rcode: dns.RcodeNameError}

// ServeDNS implements plugin.Handler's method for the plugin.
//
// The query path keeps its frames small, rare cases in functions of their
// own: a UDP query runs on a fresh goroutine, whose stack starts at 2 KiB
// (the runtime's average, when that is more) and is copied each time it
// doubles. CoreDNS's server and miekg/dns take some 1.5 KiB of it above
// this plugin, and the request's unpacking has grown it to 4 KiB already:
// an answer whose deepest frame fits in what is left costs no stack copy
// (BenchmarkServeUDP in kubeschema shows where one happens).
func (srv *Server) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 {
		return plugin.NextOrFailure(srv.Plugin, srv.Next, ctx, w, r)
	}
	zi, restLen := srv.ZoneIndex(r.Question[0].Name)
	snap := srv.snap.Load()
	if zi < 0 || snap == nil {
		return srv.notOurs(ctx, w, r, zi)
	}
	q := &Query{Ctx: ctx, W: w, Req: r, Snap: snap, Zone: zi, Qtype: r.Question[0].Qtype, Owner: r.Question[0].Name}
	rest := srv.lowerRest(q, restLen)
	// The dispatch of lookup, in this frame: through lookup, the common
	// answers would pay its frame too (a Result is copied through memory).
	var res Result
	switch {
	case dnsname.IsReverseZone(srv.Zones[zi]):
		res = srv.lookupReverse(q, rest)
	case srv.Names == RecordNames:
		res = srv.lookupRecord(q, rest)
	default:
		res = srv.lookupService(q, rest)
	}
	if res.Rcode == dns.RcodeNameError && srv.Fall.Through(q.Owner) {
		return srv.passOn(q, res)
	}
	return srv.write(q, res)
}

// notOurs handles a question of no zone of ours (zi < 0), or one asked
// before the first snapshot.
//
//go:noinline
func (srv *Server) notOurs(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, zi int) (int, error) {
	if zi < 0 {
		if srv.Next == nil {
			return srv.refuse(w, r)
		}
		return plugin.NextOrFailure(srv.Plugin, srv.Next, ctx, w, r)
	}
	srv.Replies.NotSynced.Inc()
	return dns.RcodeServerFailure, fmt.Errorf("%s: %w", srv.Plugin, ErrNotSynced)
}

// lowerRest sets q's name in lower case and returns the part of it before
// the zone, restLen bytes as asked.
func (srv *Server) lowerRest(q *Query, restLen int) string {
	q.Lower = strings.ToLower(q.Owner)
	if len(q.Lower) != len(q.Owner) { // lower-casing changed the length (not ASCII)
		rest, _ := dnsname.TrimZone(q.Lower, srv.Zones[q.Zone])
		return rest
	}
	return q.Lower[:min(restLen, len(q.Lower))]
}

// passOn passes an NXDOMAIN on to the next plugin (fallthrough), unless
// its name is the reverse name of an address of an owned range.
//
//go:noinline
func (srv *Server) passOn(q *Query, res Result) (int, error) {
	if srv.ownsReverse(q) {
		return srv.write(q, res)
	}
	srv.Replies.Fallthrough.Inc()
	return plugin.NextOrFailure(srv.Plugin, srv.Next, q.Ctx, q.W, q.Req)
}

// SetOwnedRanges says which address ranges are the cluster's own: the
// reverse name of an address in one of them that no object owns is
// NXDOMAIN from this server, with its SOA, and never passed on by
// fallthrough, so internal addresses do not leak upstream.
func (srv *Server) SetOwnedRanges(ranges []netip.Prefix) { srv.owned.Store(&ranges) }

// OwnedRanges are the ranges SetOwnedRanges set last.
func (srv *Server) OwnedRanges() []netip.Prefix {
	if p := srv.owned.Load(); p != nil {
		return *p
	}
	return nil
}

// ownsReverse tells whether q asks for the reverse name of an address in
// an owned range.
func (srv *Server) ownsReverse(q *Query) bool {
	ranges := srv.owned.Load()
	if ranges == nil || !dnsname.IsReverseZone(srv.Zones[q.Zone]) {
		return false
	}
	ip, ok := dnsname.ReverseAddr(q.Lower)
	if !ok {
		return false
	}
	for _, r := range *ranges {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

// ZoneIndex is the index in Zones of the zone of name (the longest that
// matches), or -1, and the length of what comes before the zone.
func (srv *Server) ZoneIndex(name string) (zi, restLen int) {
	zi, bestLen := -1, -1
	for i, z := range srv.Zones {
		if rest, ok := dnsname.TrimZone(name, z); ok && len(z) > bestLen {
			zi, bestLen, restLen = i, len(z), len(rest)
		}
	}
	return zi, restLen
}

// refuse answers a name outside our zones when there is no next plugin:
// we are not authoritative for it, which is not a server failure.
func (srv *Server) refuse(w dns.ResponseWriter, r *dns.Msg) (int, error) {
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeRefused)
	srv.Replies.Refused.Inc()
	return dns.RcodeRefused, w.WriteMsg(m)
}

// write sends the reply: authoritative, the question repeated as asked,
// the zone's SOA in the Authority section of a negative answer (RFC 2308).
func (srv *Server) write(q *Query, res Result) (int, error) {
	m := &dns.Msg{Question: q.Req.Question, Answer: res.Answer, Extra: res.Extra}
	m.Id, m.Response, m.Opcode, m.Authoritative = q.Req.Id, true, q.Req.Opcode, true
	m.RecursionDesired, m.CheckingDisabled, m.Rcode = q.Req.RecursionDesired, q.Req.CheckingDisabled, res.Rcode
	if len(m.Answer) == 0 || res.Rcode != dns.RcodeSuccess {
		m.Ns = srv.negative(q)
	}
	srv.Replies.Count(res.Rcode, len(m.Answer))
	if err := q.W.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// NameModel is how a server's forward zones are named: which grammar
// reads a question's name.
type NameModel uint8

const (
	// ServiceNames: the Kubernetes grammar of services under svc.<zone>
	// (svcname.go), with dns-version and ns.dns.<zone>; Facts are services.
	ServiceNames NameModel = iota
	// RecordNames: a name is a key of the snapshot, whole (NewRecords);
	// a name only above others is an empty non-terminal (NODATA).
	RecordNames
)

// lookup answers one name of q's zone by the zone's model: reverse names
// here, forward names by the server's grammar (svcserve.go, records.go).
// rest is the part before the zone. ServeDNS makes the same choice in its
// own frame; this is for the names an alias leads to.
func (srv *Server) lookup(q *Query, rest string) Result {
	if dnsname.IsReverseZone(srv.Zones[q.Zone]) {
		return srv.lookupReverse(q, rest)
	}
	if srv.Names == RecordNames {
		return srv.lookupRecord(q, rest)
	}
	return srv.lookupService(q, rest)
}

// lookupReverse answers a name of a reverse zone: the apex, or a PTR.
func (srv *Server) lookupReverse(q *Query, rest string) Result {
	if rest == "" {
		return srv.apex(q)
	}
	ip, ok := dnsname.ReverseAddr(q.Lower)
	if !ok {
		return NXDomain
	}
	entries := q.Snap.ptrOf(ip)
	if len(entries) == 0 {
		return NXDomain
	}
	if q.Qtype != dns.TypePTR && q.Qtype != dns.TypeANY {
		return Result{}
	}
	zone := srv.forwardZone()
	// Most addresses have one owner: their targets stay on the stack.
	var buf [2]ptrName
	targets, text := buf[:0], 0
	for i := range entries {
		if t, ok := q.Snap.ptrOwner(entries[i]); ok {
			targets, text = append(targets, t), text+t.nameLen(zone)
		}
	}
	if len(targets) == 1 && text <= len(onePTR{}.name) {
		return Result{Answer: srv.onePTR(q, targets[0], zone)}
	}
	var b block // filled in place (see addrBlock)
	b.alloc(&blockShape{rr: len(targets), ptr: len(targets), text: text})
	for i, t := range targets {
		start := len(b.text)
		b.text = t.appendName(b.text, zone)
		setHdr(&b.ptr[i].Hdr, q.Owner, dns.TypePTR, srv.TTL)
		b.ptr[i].Ptr = b.name(start)
		b.rr[i] = &b.ptr[i]
	}
	return Result{Answer: b.rr}
}

// onePTR is the answer of one PTR record with room for its name: the
// most common reverse answer, in a type made once rather than a block's.
type onePTR struct {
	rr   [1]dns.RR
	ptr  dns.PTR
	name [64]byte
}

// onePTR is the answer of the one PTR record to t.
func (srv *Server) onePTR(q *Query, t ptrName, zone string) []dns.RR {
	o := new(onePTR)
	name := t.appendName(o.name[:0], zone) // within o.name, unless it is longer
	setHdr(&o.ptr.Hdr, q.Owner, dns.TypePTR, srv.TTL)
	o.ptr.Ptr = unsafe.String(&name[0], len(name))
	o.rr[0] = &o.ptr
	return o.rr[:]
}

// forwardZone is the first forward zone: PTR records point into it, and
// reverse zones name its nameserver.
func (srv *Server) forwardZone() string {
	for _, z := range srv.Zones {
		if !dnsname.IsReverseZone(z) {
			return z
		}
	}
	return srv.Zones[0]
}
