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

// SOAFields are a schema's own SOA names and timers (Mesos-DNS's SOAMname,
// SOARname and the rest). A zero field keeps the default: ns.dns.<zone>
// (of the first forward zone), hostmaster.<zone>, CoreDNS's timers, and
// the TTL as the minimum.
type SOAFields struct {
	// NS is the nameserver's name, fully qualified: the SOA's MNAME and
	// the apex's NS record.
	NS string
	// Mbox is the SOA's RNAME, fully qualified.
	Mbox                           string
	Refresh, Retry, Expire, MinTTL uint32
}

// timers are the SOA's timers in effect.
func (f *SOAFields) timers(ttl uint32) (refresh, retry, expire, minTTL uint32) {
	pick := func(v, def uint32) uint32 {
		if v == 0 {
			return def
		}
		return v
	}
	return pick(f.Refresh, soaRefresh), pick(f.Retry, soaRetry), pick(f.Expire, soaExpire), pick(f.MinTTL, ttl)
}

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
			ns, mbox := srv.nsName(z), srv.SOA.Mbox
			if mbox == "" {
				mbox = "hostmaster." + strings.TrimPrefix(ns, "ns.dns.")
			}
			srv.zoneNames = append(srv.zoneNames, zoneNames{ns: ns, mbox: mbox})
		}
	})
	return srv.zoneNames[zi]
}

// nsName is the nameserver's name for zone: SOA.NS when set, else
// ns.dns.<zone> of the first forward zone (reverse zones point there too).
func (srv *Server) nsName(zone string) string {
	if srv.SOA.NS != "" {
		return srv.SOA.NS
	}
	if dnsname.IsReverseZone(zone) {
		zone = srv.forwardZone()
	}
	return "ns.dns." + zone
}

// soa is the SOA of zone zi at the snapshot's serial.
func (srv *Server) soa(s *Snapshot, zi int, owner string) dns.SOA {
	n := srv.names(zi)
	refresh, retry, expire, minTTL := srv.SOA.timers(srv.TTL)
	return dns.SOA{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: srv.TTL},
		Ns: n.ns, Mbox: n.mbox, Serial: s.serial,
		Refresh: refresh, Retry: retry, Expire: expire, Minttl: minTTL}
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
	set := srvSet{svc: svc, svcName: svcName, owner: owner, first: pi, last: pi + 1, ttl: srv.TTL}
	switch {
	case svc.kind == Virtual:
		set.targets.virtual = sel
	case svc.isNameSelection(sel):
		set.targets.order = svc.srvOrder
	default:
		set.targets.list = svc.srvTargets(sel)
	}
	if pi < 0 {
		set.first, set.last = 0, len(svc.ports)
	}
	var ans, extra []dns.RR
	if q.Qtype == dns.TypeANY && pi < 0 {
		ans, _ = set.render(true, false, nil)
	} else {
		ans, extra = set.render(true, true, &svc.turn)
	}
	if len(ans) == 0 {
		return Result{}
	}
	return Result{Answer: ans, Extra: extra}
}

// srvSet is what SRV records and their targets' addresses are rendered
// from.
type srvSet struct {
	svc     *Facts
	targets targetWalk
	// svcName ends the targets' names: "<prefix>.<svcName>".
	svcName string
	// first and last bound the ports (indexes in svc.ports) rendered.
	first, last int
	// owner of the SRV records, or "" for each port's own name.
	owner string
	ttl   uint32
}

// targetWalk lists SRV targets without a list of its own when it can: a
// virtual service's one target (its name), the runs of one host name in
// a headless service's srvOrder, or else a list made for the selection.
type targetWalk struct {
	virtual selection
	order   []int
	list    []target
}

// at is the target that starts at i, and where the next one starts; ok
// false past the last.
func (w *targetWalk) at(svc *Facts, i int) (t target, next int, ok bool) {
	switch {
	case w.order != nil:
		if i >= len(w.order) {
			return target{}, i, false
		}
		j := i + 1
		for j < len(w.order) && svc.sameTarget(w.order[i], w.order[j]) {
			j++
		}
		return target{sel: selection{idx: w.order[i:j:j]}}, j, true
	case w.list != nil:
		if i >= len(w.list) {
			return target{}, i, false
		}
		return w.list[i], i + 1, true
	}
	return target{sel: w.virtual}, 1, i == 0 && svc.kind == Virtual
}

// render renders, in one block, the SRV records of each port and target
// when srvs is set (ports in order, then targets; rotated by turn unless
// it is nil), and the addresses of every target, in order, when addrs is
// set.
func (s *srvSet) render(srvs, addrs bool, turn *atomic.Uint32) (answer, extra []dns.RR) {
	svc := s.svc
	nt, naddr, text := 0, 0, 0
	for t, i, ok := s.targets.at(svc, 0); ok; t, i, ok = s.targets.at(svc, i) {
		nt++
		if addrs {
			naddr += t.sel.len()
		}
		text += s.nameLen(&t)
	}
	nsrv := 0
	if srvs {
		nsrv = (s.last - s.first) * nt
		for p := s.first; p < s.last && s.owner == "" && nt > 0; p++ {
			text += len("_._.") + len(svc.ports[p].Name) + len(svc.ports[p].Proto) + len(s.svcName)
		}
	}
	var b block // filled in place (see addrBlock)
	b.alloc(&blockShape{rr: nsrv + naddr, addr: naddr, srv: nsrv, text: text})
	answer, extra = b.rr[:nsrv:nsrv], b.rr[nsrv:]
	start := 0
	if turn != nil && nsrv > 1 {
		start = int(turn.Add(1) % uint32(nsrv))
	}
	w, x, k := weight(nt), 0, 0
	for t, i, ok := s.targets.at(svc, 0); ok; t, i, ok = s.targets.at(svc, i) {
		name := s.name(&b, &t)
		for p := s.first; p < s.last && srvs; p++ {
			j := (p-s.first)*nt + k
			r := &b.srv[j]
			setHdr(&r.Hdr, s.portOwner(&b, p, k, nt), dns.TypeSRV, s.ttl)
			r.Weight, r.Port, r.Target = w, svc.portNumber(p, svc.endpoints[t.sel.at(0)].group), name
			answer[(j-start+nsrv)%nsrv] = r
		}
		for m := 0; m < t.sel.len() && addrs; m++ {
			extra[x] = b.addrRecord(x, &svc.endpoints[t.sel.at(m)], name, s.ttl)
			x++
		}
		k++
	}
	return answer, extra
}

// nameLen is the length of t's name, when it has to be made.
func (s *srvSet) nameLen(t *target) int {
	switch {
	case s.svc.kind == Virtual:
		return 0
	case t.prefix != "":
		return len(t.prefix) + 1 + len(s.svcName)
	}
	return s.svc.prefixLen(t.sel.at(0)) + 1 + len(s.svcName)
}

// name is t's name: the service name for a virtual service, else made in
// b's text.
func (s *srvSet) name(b *block, t *target) string {
	if s.svc.kind == Virtual {
		return s.svcName
	}
	start := len(b.text)
	if t.prefix != "" {
		b.text = append(b.text, t.prefix...)
	} else {
		b.text = s.svc.appendPrefix(b.text, t.sel.at(0))
	}
	b.text = append(append(b.text, '.'), s.svcName...)
	return b.name(start)
}

// portOwner is the owner of the SRV records of port p: the set's owner,
// else the port's name, made in b's text for the first of the nt targets
// (k 0) and read back from its record for the others.
func (s *srvSet) portOwner(b *block, p, k, nt int) string {
	switch {
	case s.owner != "":
		return s.owner
	case k > 0:
		return b.srv[(p-s.first)*nt].Hdr.Name
	}
	start := len(b.text)
	b.text = append(append(b.text, '_'), s.svc.ports[p].Name...)
	b.text = append(append(b.text, "._"...), s.svc.ports[p].Proto...)
	b.text = append(append(b.text, '.'), s.svcName...)
	return b.name(start)
}

// Records lists every record of svc under zone, for a transfer: its
// addresses, each host name's addresses in name order, its SRV records.
func (srv *Server) Records(svc *Facts, zone string) []dns.RR {
	if svc.kind == Records {
		return srv.recordSetRecords(svc, zone)
	}
	name := ServiceName(svc, zone)
	if svc.kind == Alias {
		return []dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: srv.TTL}, Target: svc.rare.target}}
	}
	out := addrBlock(svc, all(svc), 0, name, srv.TTL, "")
	if svc.kind == Headless {
		hosts := srvSet{svc: svc, targets: targetWalk{list: svc.srvTargets(all(svc))}, svcName: name, ttl: srv.TTL}
		_, extra := hosts.render(false, true, nil)
		out = append(out, extra...)
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
