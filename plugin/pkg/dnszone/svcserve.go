package dnszone

import (
	"github.com/miekg/dns"
)

// The service model's answers: a forward name is read by the ServiceNames
// grammar (svcname.go), the service it names is found in the snapshot, and
// the records the name and type ask for are rendered from its facts
// (svcfacts.go) by render.go and svcrender.go. The names the grammar leaves
// to a schema (kubeschema's pod names) go to its Schema.

// Schema is what a plugin adds to the common grammar.
type Schema interface {
	// Other answers a name the common grammar leaves to the schema
	// (NameOther), in q's zone. (The query is passed by value so that it
	// stays on the stack: an interface call makes a pointer escape.)
	Other(q Query, n Name) Result
	// Follow answers the target of an alias that is outside the served
	// zones, through the server's chain; ok false leaves the CNAME alone.
	Follow(q Query, target string) (res Result, ok bool)
}

// lookupService answers a name of a forward zone by the ServiceNames
// grammar (svcname.go): rest is the name below the zone, lower case.
func (srv *Server) lookupService(q *Query, rest string) Result {
	var n Name
	n.parse(rest)
	switch n.Kind {
	case NameService, NameHost, NameProto, NamePort, NameZonal:
		svc := q.Snap.Service(n.Key)
		if svc == nil || (svc.kind == Headless && len(svc.endpoints) == 0 && n.Kind != NameZonal) {
			// A headless service without endpoints is kept for its zonal
			// names alone (NODATA, as stock has them); its other names do
			// not exist.
			return NXDomain
		}
		return srv.serviceAnswer(q, svc, &n)
	case NameOther:
		return srv.other(q, &n)
	}
	return srv.special(q, &n)
}

// special answers the names that are not a service's or the schema's:
// the apex, dns-version, the NS name, svc and the namespaces.
//
//go:noinline
func (srv *Server) special(q *Query, n *Name) Result {
	switch n.Kind {
	case NameApex:
		return srv.apex(q)
	case NameVersion:
		if q.Qtype != dns.TypeTXT && q.Qtype != dns.TypeANY {
			return Result{}
		}
		return Result{Answer: []dns.RR{&dns.TXT{Hdr: q.hdr(q.Owner, dns.TypeTXT, srv.TTL), Txt: []string{srv.Version}}}}
	case NameDNSLabel:
		return Result{}
	case NameNS:
		return Result{Answer: q.nsAddrs(srv, q.Owner)}
	case NameSvcLabel:
		if q.Snap.Len() == 0 {
			return NXDomain
		}
		return Result{}
	case NameNamespace:
		if !q.Snap.HasNamespace(n.Namespace) {
			return NXDomain
		}
		return Result{}
	}
	return NXDomain
}

// other asks the schema, outside lookupService so that its frame holds
// no copy of the query: a UDP query runs on a fresh goroutine, whose stack
// starts at 2 KiB (the runtime's average, when that is more) and is
// copied each time it doubles (BenchmarkServeUDP in kubeschema shows
// where).
//
//go:noinline
func (srv *Server) other(q *Query, n *Name) Result { return srv.Schema.Other(*q, *n) }

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

// serviceAnswer answers a name of an existing service.
func (srv *Server) serviceAnswer(q *Query, svc *Facts, n *Name) Result {
	if n.Kind != NameService || svc.kind == Alias || q.Qtype == dns.TypeSRV || q.Qtype == dns.TypeANY {
		return srv.otherServiceAnswer(q, svc, n)
	}
	// The most common answer: the addresses of a service's name.
	return Result{Answer: q.addrsFor(svc, svc.nameSelection(), srv.TTL)}
}

// otherServiceAnswer answers the other names of a service and the other
// types of its name.
//
//go:noinline
func (srv *Server) otherServiceAnswer(q *Query, svc *Facts, n *Name) Result {
	switch n.Kind {
	case NameService:
		if svc.kind == Alias {
			return srv.aliasAnswer(q, svc)
		}
		sel := svc.nameSelection()
		if q.Qtype == dns.TypeSRV {
			return srv.srvAnswer(q, svc, -1, q.Lower, sel, "")
		}
		addrs := q.addrs(svc, sel, nil, q.Owner, srv.TTL) // ANY
		srvs := srv.srvAnswer(q, svc, -1, q.Lower, sel, "")
		return Result{Answer: append(addrs, srvs.Answer...)}
	case NameHost:
		var buf [4]int // a host name is most often one endpoint's, or two
		eps := svc.appendHostEndpoints(buf[:0], n.Host)
		if len(eps) == 0 {
			return NXDomain
		}
		return Result{Answer: q.addrsFor(svc, selection{idx: eps}, srv.TTL)}
	case NameProto:
		if !svc.hasProto(n.Proto) {
			return NXDomain
		}
		return Result{}
	case NameZonal:
		return srv.zonalAnswer(q, svc, n)
	}
	pi := svc.port(n.Port)
	if pi < 0 {
		return NXDomain
	}
	if q.Qtype != dns.TypeSRV && q.Qtype != dns.TypeANY {
		return Result{}
	}
	return srv.srvAnswer(q, svc, pi, q.Lower[len(n.Port)+1:], svc.nameSelection(), q.Owner)
}

// zonalAnswer answers <zone>.pin._zone.<svc>... and <zone>.prefer._zone...
// (the zonal option, as stock CoreDNS 1.15 defines them): a headless
// service's endpoints in that topology zone, A, AAAA and SRV only. A pin
// with none there is NODATA, also when the service has no endpoints at
// all; a prefer widens to every endpoint. Other services have no such
// names.
func (srv *Server) zonalAnswer(q *Query, svc *Facts, n *Name) Result {
	if !srv.Zonal || svc.kind != Headless {
		return NXDomain
	}
	sel := svc.inZone(n.TopologyZone)
	if sel.len() == 0 && n.Prefer {
		sel = all(svc)
	}
	switch q.Qtype {
	case dns.TypeA, dns.TypeAAAA:
		return Result{Answer: q.addrsFor(svc, sel, srv.TTL)}
	case dns.TypeSRV:
		return srv.srvAnswer(q, svc, -1, ServiceName(svc, srv.Zones[q.Zone]), sel, q.Owner)
	}
	return Result{}
}

// maxAliasHops bounds CNAME chains between our own aliases.
const maxAliasHops = 8

// aliasAnswer answers an alias: the CNAME, then the target's records:
// from our own data when the target is in a zone we serve, else through
// the schema (the server's chain).
func (srv *Server) aliasAnswer(q *Query, svc *Facts) Result {
	if q.Qtype == dns.TypeCNAME || q.depth >= maxAliasHops {
		return Result{Answer: srv.cname(q, svc, nil)}
	}
	var next Result
	if zi, restLen := srv.ZoneIndex(svc.rare.target); zi >= 0 {
		hop := *q
		hop.Owner, hop.Lower, hop.depth = svc.rare.target, svc.rare.target, q.depth+1
		hop.Zone, hop.via, hop.led = zi, q.Owner, false
		if next = srv.lookup(&hop, svc.rare.target[:restLen]); hop.led {
			return next
		}
	} else {
		var ok bool
		if next, ok = srv.Schema.Follow(*q, svc.rare.target); !ok {
			return Result{Answer: srv.cname(q, svc, nil)}
		}
	}
	return Result{Answer: srv.cname(q, svc, next.Answer), Extra: next.Extra, Rcode: next.Rcode}
}

// cname is the alias's CNAME record followed by the records of after, in
// one block.
func (srv *Server) cname(q *Query, svc *Facts, after []dns.RR) []dns.RR {
	if len(after) == 0 {
		o := new(oneCNAME)
		o.cname = dns.CNAME{Hdr: q.hdr(q.Owner, dns.TypeCNAME, srv.TTL), Target: svc.rare.target}
		o.rr[0] = &o.cname
		return o.rr[:]
	}
	var b block // filled in place (see addrBlock)
	b.alloc(&blockShape{rr: 1 + len(after), cname: 1})
	b.cname[0] = dns.CNAME{Hdr: q.hdr(q.Owner, dns.TypeCNAME, srv.TTL), Target: svc.rare.target}
	b.rr[0] = &b.cname[0]
	copy(b.rr[1:], after)
	return b.rr
}
