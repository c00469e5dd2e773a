package k8sexternal

import (
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/miekg/dns"
)

// The zone's own records: SOA and NS at the apex, and the name server
// ns1.<apex>.<zone> with its addresses, as CoreDNS's k8s_external has them.

// SOA timers, as CoreDNS's k8s_external has them.
const (
	soaRefresh = 7200
	soaRetry   = 1800
	soaExpire  = 86400
)

// apexName is <apex>.<zone>, where the name server's names are.
func (e *External) apexName(zone string) string { return dnsutil.Join(e.apex, zone) }

// nsName is the name server's name in zone.
func (e *External) nsName(zone string) string { return dnsutil.Join("ns1", e.apex, zone) }

func (e *External) soa(zone string) *dns.SOA {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: e.ttl},
		Ns:      e.nsName(zone),
		Mbox:    dnsutil.Join("hostmaster", e.apex, zone),
		Serial:  e.backend.ExternalSerial(zone),
		Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire,
		Minttl: e.ttl,
	}
}

// serveApex answers the apex and the names under <apex>.<zone>: SOA and
// NS (with the name server's addresses in the Additional section) at the
// apex, the addresses at ns1.<apex>, NODATA at <apex> itself (an empty
// non-terminal), NXDOMAIN below it otherwise.
func (e *External) serveApex(q *query) reply {
	zone, name := q.state.Zone, q.state.Name()
	switch {
	case name == zone:
		return e.apexRecords(q)
	case name == e.nsName(zone):
		return reply{answer: e.nsAddrs(q, q.state.QName(), q.state.QType())}
	case name == e.apexName(zone):
		return reply{}
	}
	return reply{rcode: dns.RcodeNameError}
}

func (e *External) apexRecords(q *query) reply {
	zone := q.state.Zone
	switch q.state.QType() {
	case dns.TypeSOA:
		return reply{answer: []dns.RR{e.soa(zone)}}
	case dns.TypeNS:
		ns := &dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: e.ttl}, Ns: e.nsName(zone)}
		return reply{answer: []dns.RR{ns}, extra: e.nsAddrs(q, e.nsName(zone), 0)}
	}
	return reply{}
}

// nsAddrs are the name server's addresses from the backend, owned by
// owner, of type qtype only unless it is 0.
func (e *External) nsAddrs(q *query, owner string, qtype uint16) []dns.RR {
	var out []dns.RR
	for _, rr := range e.backend.ExternalAddress(q.state, e.headless) {
		h := rr.Header()
		if qtype != 0 && h.Rrtype != qtype {
			continue
		}
		h.Name, h.Ttl = owner, e.ttl
		out = append(out, rr)
	}
	return out
}
