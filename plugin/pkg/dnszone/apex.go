package dnszone

import (
	"strings"

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
