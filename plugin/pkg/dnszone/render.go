package dnszone

import (
	"net/netip"
	"sync/atomic"

	"github.com/miekg/dns"
)

func (q *Query) hdr(name string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

// The most common answers, each a record and its one-element slice in a
// single allocation.
type (
	oneA struct {
		rr [1]dns.RR
		a  dns.A
	}
	oneAAAA struct {
		rr   [1]dns.RR
		aaaa dns.AAAA
	}
	oneSOA struct {
		rr  [1]dns.RR
		soa dns.SOA
	}
	oneCNAME struct {
		rr    [1]dns.RR
		cname dns.CNAME
	}
)

// selection is some endpoints of a service: indexes lo to hi, or the
// indexes in idx when it is set. Endpoints are sorted IPv4 first, and
// selections keep that order.
type selection struct {
	lo, hi int
	idx    []int
}

func (s selection) len() int {
	if s.idx != nil {
		return len(s.idx)
	}
	return s.hi - s.lo
}

func (s selection) at(k int) int {
	if s.idx != nil {
		return s.idx[k]
	}
	return s.lo + k
}

// family is the selection's IPv4 part when v4, else its IPv6 part.
func (s selection) family(svc *Facts, v4 bool) selection {
	four, six := s.split(svc)
	if v4 {
		return four
	}
	return six
}

// split is the selection's IPv4 and IPv6 parts.
func (s selection) split(svc *Facts) (v4, v6 selection) {
	if s.idx == nil {
		mid := min(max(svc.n4, s.lo), s.hi)
		return selection{lo: s.lo, hi: mid}, selection{lo: mid, hi: s.hi}
	}
	n4 := 0
	for _, i := range s.idx {
		if svc.endpoints[i].is4() {
			n4++
		}
	}
	return selection{idx: s.idx[:n4:n4]}, selection{idx: s.idx[n4:]}
}

func all(svc *Facts) selection { return selection{lo: 0, hi: len(svc.endpoints)} }

// addrsFor answers A or AAAA (rotated) or ANY from the selection; nil
// (NODATA) for any other type.
func (q *Query) addrsFor(svc *Facts, sel selection, ttl uint32) []dns.RR {
	var turn *atomic.Uint32
	switch q.Qtype {
	case dns.TypeA, dns.TypeAAAA:
		sel, turn = sel.family(svc, q.Qtype == dns.TypeA), &svc.turn
	case dns.TypeANY:
	default:
		return nil
	}
	return q.addrs(svc, sel, turn, q.Owner, ttl)
}

// addrs renders the address records of sel owned by owner, starting one
// further each call when turn is set (rotation), in one allocation.
func (q *Query) addrs(svc *Facts, sel selection, turn *atomic.Uint32, owner string, ttl uint32) []dns.RR {
	n := sel.len()
	if n == 0 {
		return nil
	}
	start := 0
	if turn != nil && n > 1 {
		start = int(turn.Add(1) % uint32(n))
	}
	if q.via != "" && !q.led {
		q.led = true
		return addrBlock(svc, sel, start, owner, ttl, q.via)
	}
	if e := &svc.endpoints[sel.at(0)]; n == 1 {
		return single(e, owner, ttl)
	}
	return addrBlock(svc, sel, start, owner, ttl, "")
}

// single is the one address record of e, filled in place (no copy of a
// record on the stack: UDP queries run on small fresh stacks).
func single(e *endpoint, owner string, ttl uint32) []dns.RR {
	hdr := dns.RR_Header{Name: owner, Class: dns.ClassINET, Ttl: ttl}
	if e.is4() {
		o := new(oneA)
		o.a.Hdr, o.a.A = hdr, e.ip()
		o.a.Hdr.Rrtype = dns.TypeA
		o.rr[0] = &o.a
		return o.rr[:]
	}
	o := new(oneAAAA)
	o.aaaa.Hdr, o.aaaa.AAAA = hdr, e.ip()
	o.aaaa.Hdr.Rrtype = dns.TypeAAAA
	o.rr[0] = &o.aaaa
	return o.rr[:]
}

// addrBlock renders the address records of sel, from start on and
// around, in one block, after the CNAME from via to owner unless via is
// "". The records' addresses share the endpoints' memory: a rendered
// record is never modified, and the service outlives the reply.
func addrBlock(svc *Facts, sel selection, start int, owner string, ttl uint32, via string) []dns.RR {
	n, lead := sel.len(), 0
	if via != "" {
		lead = 1
	}
	var b block // filled in place: newBlock's result would take a copy's room in this frame
	b.alloc(&blockShape{rr: lead + n, addr: n, cname: lead})
	if via != "" {
		setHdr(&b.cname[0].Hdr, via, dns.TypeCNAME, ttl)
		b.cname[0].Target = owner
		b.rr[0] = &b.cname[0]
	}
	for k := range n {
		b.rr[lead+k] = b.addrRecord(k, &svc.endpoints[sel.at((start+k)%n)], owner, ttl)
	}
	return b.rr
}

// oneAddr is an answer of one address record that holds its address.
type oneAddr struct {
	rr [1]dns.RR
	a  dns.A
	ip [16]byte
}

// AddrAnswer is the answer of one A or AAAA record of ip owned by name, in
// one allocation.
func AddrAnswer(name string, ip netip.Addr, ttl uint32) []dns.RR {
	o := &oneAddr{ip: ip.As16()}
	o.a.Hdr = dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}
	if ip.Is4() {
		o.a.A = o.ip[12:16:16]
		o.rr[0] = &o.a
		return o.rr[:]
	}
	aaaa := asAAAA(&o.a)
	aaaa.Hdr.Rrtype, aaaa.AAAA = dns.TypeAAAA, o.ip[:]
	o.rr[0] = aaaa
	return o.rr[:]
}

// NewAddrRecord is an A or AAAA record of ip owned by name.
func NewAddrRecord(name string, ip netip.Addr, ttl uint32) dns.RR {
	if ip.Is4() {
		return &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: ip.AsSlice()}
	}
	return &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: ip.AsSlice()}
}
