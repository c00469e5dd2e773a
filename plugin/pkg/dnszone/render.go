package dnszone

import (
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// Timers of the SOA, as CoreDNS's kubernetes plugin has them.
const (
	soaRefresh = 7200
	soaRetry   = 1800
	soaExpire  = 86400
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
)

// negative is the Authority section of a negative answer: the SOA of the
// query's zone at its snapshot's serial. A fresh record, as every record
// of a reply is: the cache plugin sets the TTLs of what it is given.
func (srv *Server) negative(q *Query) []dns.RR {
	o := &oneSOA{soa: srv.soa(q.Snap, q.Zone, srv.Zones[q.Zone])}
	o.rr[0] = &o.soa
	return o.rr[:]
}

// zoneNames are the names of a zone's SOA, made once.
type zoneNames struct{ ns, mbox string }

// names are the SOA names of zone zi.
func (srv *Server) names(zi int) zoneNames {
	srv.namesOnce.Do(func() {
		for _, z := range srv.Zones {
			ns := srv.nsName(z)
			srv.zoneNames = append(srv.zoneNames, zoneNames{ns: ns, mbox: "hostmaster." + strings.TrimPrefix(ns, "ns.dns.")})
		}
	})
	return srv.zoneNames[zi]
}

// nsName is the nameserver's name for zone: ns.dns.<zone> of the first
// forward zone (reverse zones point there too).
func (srv *Server) nsName(zone string) string {
	if dnsname.IsReverseZone(zone) {
		zone = srv.forwardZone()
	}
	return "ns.dns." + zone
}

// soa is the SOA of zone zi at the snapshot's serial.
func (srv *Server) soa(s *Snapshot, zi int, owner string) dns.SOA {
	n := srv.names(zi)
	return dns.SOA{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: srv.TTL},
		Ns: n.ns, Mbox: n.mbox, Serial: s.serial,
		Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire, Minttl: srv.TTL}
}

// apex answers the zone apex: SOA, NS (with the nameserver's addresses as
// additional records) or both for ANY.
func (srv *Server) apex(q *Query) Result {
	soa := func() dns.RR { s := srv.soa(q.Snap, q.Zone, q.Owner); return &s }
	ns := func() dns.RR {
		return &dns.NS{Hdr: q.hdr(q.Owner, dns.TypeNS, srv.TTL), Ns: srv.nsName(srv.Zones[q.Zone])}
	}
	switch q.Qtype {
	case dns.TypeSOA:
		return Result{Answer: []dns.RR{soa()}}
	case dns.TypeNS:
		var extra []dns.RR
		if !dnsname.IsReverseZone(srv.Zones[q.Zone]) {
			extra = srv.nsAddrRecords(srv.nsName(srv.Zones[q.Zone]), true, true)
		}
		return Result{Answer: []dns.RR{ns()}, Extra: extra}
	case dns.TypeANY:
		return Result{Answer: []dns.RR{soa(), ns()}}
	}
	return Result{}
}

// nsAddrs answers ns.dns.<zone>: A, AAAA or ANY.
func (q *Query) nsAddrs(srv *Server, owner string) []dns.RR {
	switch q.Qtype {
	case dns.TypeA:
		return srv.nsAddrRecords(owner, true, false)
	case dns.TypeAAAA:
		return srv.nsAddrRecords(owner, false, true)
	case dns.TypeANY:
		return srv.nsAddrRecords(owner, true, true)
	}
	return nil
}

// nsAddrRecords are the address records of the nameserver, owned by owner.
func (srv *Server) nsAddrRecords(owner string, v4, v6 bool) []dns.RR {
	var a, aaaa []dns.RR
	for _, ip := range srv.NSAddrs {
		hdr := dns.RR_Header{Name: owner, Class: dns.ClassINET, Ttl: srv.TTL}
		switch {
		case ip.Is4() && v4:
			hdr.Rrtype = dns.TypeA
			a = append(a, &dns.A{Hdr: hdr, A: ip.AsSlice()})
		case !ip.Is4() && v6:
			hdr.Rrtype = dns.TypeAAAA
			aaaa = append(aaaa, &dns.AAAA{Hdr: hdr, AAAA: ip.AsSlice()})
		}
	}
	return append(a, aaaa...)
}

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
	v4, v6 := sel.split(svc)
	switch q.Qtype {
	case dns.TypeA:
		return q.addrs(svc, v4, &svc.turn, q.Owner, ttl)
	case dns.TypeAAAA:
		return q.addrs(svc, v6, &svc.turn, q.Owner, ttl)
	case dns.TypeANY:
		return q.addrs(svc, sel, nil, q.Owner, ttl)
	}
	return nil
}

// addrs renders the address records of sel owned by owner, starting one
// further each call when turn is set (rotation), in as few allocations as
// the count allows: one for one address, else one slice and one array of
// records per family.
func (q *Query) addrs(svc *Facts, sel selection, turn *atomic.Uint32, owner string, ttl uint32) []dns.RR {
	n := sel.len()
	if n == 0 {
		return nil
	}
	start := 0
	if turn != nil && n > 1 {
		start = int(turn.Add(1) % uint32(n))
	}
	if e := &svc.endpoints[sel.at(0)]; n == 1 {
		return single(e, owner, ttl)
	}
	return appendAddrs(make([]dns.RR, 0, n), svc, sel, start, owner, ttl)
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

// appendAddrs appends the address records of sel, from start on and
// around, to out. The records' addresses share the endpoints' memory: a
// rendered record is never modified, and the service outlives the reply.
func appendAddrs(out []dns.RR, svc *Facts, sel selection, start int, owner string, ttl uint32) []dns.RR {
	v4, v6 := sel.split(svc)
	as := make([]dns.A, v4.len())
	aaaas := make([]dns.AAAA, v6.len())
	n := sel.len()
	for k := range n {
		e := &svc.endpoints[sel.at((start+k)%n)]
		if e.is4() {
			a := &as[0]
			as = as[1:]
			*a = dns.A{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: e.ip()}
			out = append(out, a)
			continue
		}
		a := &aaaas[0]
		aaaas = aaaas[1:]
		*a = dns.AAAA{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: e.ip()}
		out = append(out, a)
	}
	return out
}

// srvAnswer answers SRV for port pi of svc, or every named port (pi < 0),
// from the endpoints in sel: one record per port and target, rotated,
// with the targets' addresses as additional records. svcName is the
// service's name in the query's zone, lower case. The records are owned
// by owner, or, when it is "", by each port's name
// (_<port>._<proto>.<svcName>).
func (srv *Server) srvAnswer(q *Query, svc *Facts, pi int, svcName string, sel selection, owner string) Result {
	if len(svc.ports) == 0 {
		return Result{}
	}
	var targets []target
	var names []string
	if svc.kind == Virtual {
		// The one target is the service name: a piece of the question.
		targets, names = []target{{sel: sel}}, []string{svcName}
	} else if svc.isNameSelection(sel) {
		targets = svc.nameTargets()
		names = svc.targetNames(targets, svcName)
	} else {
		targets = svc.srvTargets(sel)
		names = targetNames(targets, svcName)
	}
	if len(targets) == 0 {
		return Result{}
	}
	first, last := pi, pi+1
	if pi < 0 {
		first, last = 0, len(svc.ports)
	}
	ans := make([]dns.RR, 0, (last-first)*len(targets))
	recs := make([]dns.SRV, (last-first)*len(targets))
	w := weight(len(targets))
	for p := first; p < last; p++ {
		portOwner := owner
		if portOwner == "" {
			portOwner = "_" + svc.ports[p].Name + "._" + svc.ports[p].Proto + "." + svcName
		}
		for ti, t := range targets {
			rec := &recs[len(ans)]
			*rec = dns.SRV{Hdr: q.hdr(portOwner, dns.TypeSRV, srv.TTL), Weight: w,
				Port: svc.portNumber(p, svc.endpoints[t.sel.at(0)].group), Target: names[ti]}
			ans = append(ans, rec)
		}
	}
	if q.Qtype == dns.TypeANY && pi < 0 {
		return Result{Answer: ans}
	}
	return Result{Answer: rotate(ans, &svc.turn), Extra: targetAddrs(svc, targets, names, srv.TTL)}
}

// targetNames are the targets' full names, built as one string.
func targetNames(targets []target, svcName string) []string {
	var b strings.Builder
	for _, t := range targets {
		b.WriteString(t.prefix)
		b.WriteByte('.')
		b.WriteString(svcName)
	}
	all := b.String()
	names := make([]string, len(targets))
	off := 0
	for i, t := range targets {
		n := len(t.prefix) + 1 + len(svcName)
		names[i] = all[off : off+n]
		off += n
	}
	return names
}

// targetNames are the full names of targets from nameTargets, built as one
// string from the endpoints' labels.
func (s *Facts) targetNames(targets []target, svcName string) []string {
	size := 0
	for range targets {
		size += 64 + len(svcName)
	}
	b := make([]byte, 0, size)
	ends := make([]int, len(targets))
	for i, t := range targets {
		b = s.appendPrefix(b, t.sel.at(0))
		b = append(b, '.')
		b = append(b, svcName...)
		ends[i] = len(b)
	}
	all := string(b)
	names := make([]string, len(targets))
	start := 0
	for i, end := range ends {
		names[i] = all[start:end]
		start = end
	}
	return names
}

// targetAddrs are the address records of every target, in order, each
// target's IPv4 addresses first, in one array of each type.
func targetAddrs(svc *Facts, targets []target, names []string, ttl uint32) []dns.RR {
	n, n4 := 0, 0
	for _, t := range targets {
		v4, _ := t.sel.split(svc)
		n, n4 = n+t.sel.len(), n4+v4.len()
	}
	out := make([]dns.RR, 0, n)
	as := make([]dns.A, n4)
	aaaas := make([]dns.AAAA, n-n4)
	for ti, t := range targets {
		for k := range t.sel.len() {
			e := &svc.endpoints[t.sel.at(k)]
			if e.is4() {
				as[0] = dns.A{Hdr: dns.RR_Header{Name: names[ti], Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: e.ip()}
				out, as = append(out, &as[0]), as[1:]
				continue
			}
			aaaas[0] = dns.AAAA{Hdr: dns.RR_Header{Name: names[ti], Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: e.ip()}
			out, aaaas = append(out, &aaaas[0]), aaaas[1:]
		}
	}
	return out
}

// rotate turns rrs in place so it starts one further each call.
func rotate(rrs []dns.RR, turn *atomic.Uint32) []dns.RR {
	if len(rrs) < 2 {
		return rrs
	}
	start := int(turn.Add(1) % uint32(len(rrs)))
	out := make([]dns.RR, len(rrs))
	n := copy(out, rrs[start:])
	copy(out[n:], rrs[:start])
	return out
}

// Records lists every record of svc under zone, for a transfer: its
// addresses, each host name's addresses in name order, its SRV records.
func (srv *Server) Records(svc *Facts, zone string) []dns.RR {
	name := ServiceName(svc, zone)
	if svc.kind == Alias {
		return []dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: srv.TTL}, Target: svc.target}}
	}
	out := appendAddrs(nil, svc, all(svc), 0, name, srv.TTL)
	if svc.kind == Headless {
		targets := svc.srvTargets(all(svc))
		out = append(out, targetAddrs(svc, targets, targetNames(targets, name), srv.TTL)...)
	}
	q := &Query{Qtype: dns.TypeANY, Zone: srv.zoneOf(zone)}
	return append(out, srv.srvAnswer(q, svc, -1, name, all(svc), "").Answer...)
}

func (srv *Server) zoneOf(zone string) int {
	for i, z := range srv.Zones {
		if z == zone {
			return i
		}
	}
	return -1
}

// NewAddrRecord is an A or AAAA record of ip owned by name.
func NewAddrRecord(name string, ip netip.Addr, ttl uint32) dns.RR {
	if ip.Is4() {
		return &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: ip.AsSlice()}
	}
	return &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: ip.AsSlice()}
}
