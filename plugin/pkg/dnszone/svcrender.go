package dnszone

import (
	"sync/atomic"

	"github.com/miekg/dns"
)

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

// weight is the SRV weight of each of n targets: the load spread evenly,
// as the stock plugin does.
func weight(n int) uint16 { return uint16(max(1, 100/max(1, n))) }

// serviceRecords lists every record of a service under zone, for a
// transfer: its addresses, each host name's addresses in name order, its
// SRV records; an alias's CNAME.
func (srv *Server) serviceRecords(svc *Facts, zone string) []dns.RR {
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
