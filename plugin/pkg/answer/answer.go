// Package answer holds what the schema plugins' query paths and record
// builders share: the shape of a reply (authoritative, the question's case
// repeated, the SOA on negative answers), rotation of multi-record answers,
// record constructors, zone arguments and SOA serials.
//
// Everything here is small and allocation-conscious: Reply and Rotate run
// once per query; the rest runs when records are rebuilt.
package answer

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Hdr is the header of a record of class IN.
func Hdr(name string, rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

// AddrRecords splits addresses into A and AAAA records owned by name.
func AddrRecords(name string, addrs []netip.Addr, ttl uint32) (a, aaaa []dns.RR) {
	for _, ip := range addrs {
		if ip.Is4() {
			a = append(a, &dns.A{Hdr: Hdr(name, dns.TypeA, ttl), A: ip.AsSlice()})
		} else {
			aaaa = append(aaaa, &dns.AAAA{Hdr: Hdr(name, dns.TypeAAAA, ttl), AAAA: ip.AsSlice()})
		}
	}
	return a, aaaa
}

// AddrOf is the address of an A or AAAA record; the zero Addr otherwise.
func AddrOf(rr dns.RR) netip.Addr {
	switch v := rr.(type) {
	case *dns.A:
		a, _ := netip.AddrFromSlice(v.A)
		return a.Unmap()
	case *dns.AAAA:
		a, _ := netip.AddrFromSlice(v.AAAA)
		return a
	}
	return netip.Addr{}
}

// Rotate returns a fresh slice holding rrs, starting one further each
// call, so clients that take the first record spread their load. The
// records themselves are shared and never modified.
func Rotate(rrs []dns.RR, turn *atomic.Uint32) []dns.RR {
	if len(rrs) == 0 {
		return nil
	}
	out := make([]dns.RR, len(rrs))
	start := 0
	if turn != nil && len(rrs) > 1 {
		start = int(turn.Add(1) % uint32(len(rrs)))
	}
	n := copy(out, rrs[start:])
	copy(out[n:], rrs[:start])
	return out
}

// WithOwnerCase copies the records owned by lower so their owner is
// spelled as the question was (0x20 case randomisation). Shared records
// are never modified.
func WithOwnerCase(rrs []dns.RR, lower, asked string) []dns.RR {
	out := make([]dns.RR, len(rrs))
	for i, rr := range rrs {
		if rr.Header().Name == lower {
			rr = dns.Copy(rr)
			rr.Header().Name = asked
		}
		out[i] = rr
	}
	return out
}

// Reply is the authoritative reply to r: the question repeated as asked,
// the answer's owners spelled as asked (lower is the lower-case question
// name the records were looked up with), and negative (the zone's SOA) in
// the Authority section when the answer is negative (NXDOMAIN or NODATA,
// RFC 2308). negative is made once per zone snapshot and shared between
// replies, as the records are, so a negative answer allocates no slice.
func Reply(r *dns.Msg, lower string, rcode int, ans, extra, negative []dns.RR) *dns.Msg {
	m := &dns.Msg{Answer: ans, Extra: extra}
	m.Id, m.Response, m.Opcode, m.Authoritative = r.Id, true, r.Opcode, true
	m.RecursionDesired, m.CheckingDisabled = r.RecursionDesired, r.CheckingDisabled
	m.Question = r.Question
	m.Rcode = rcode
	if name := r.Question[0].Name; name != lower {
		m.Answer = WithOwnerCase(m.Answer, lower, name)
	}
	if len(m.Answer) == 0 || rcode != dns.RcodeSuccess {
		m.Ns = negative
	}
	return m
}

// Result names the outcome of a reply for a requests metric: success,
// nodata, nxdomain or error.
func Result(rcode, answers int) string {
	switch {
	case rcode == dns.RcodeNameError:
		return "nxdomain"
	case rcode != dns.RcodeSuccess:
		return "error"
	case answers == 0:
		return "nodata"
	}
	return "success"
}

// Counters are the children of a requests counter by Result, looked up
// once: WithLabelValues hashes and validates its label on every call, a
// sixth of a cached answer's time.
type Counters struct {
	success, nodata, nxdomain, failed prometheus.Counter
	// The outcomes that are not a reply of ours: passed to the next
	// plugin, refused (no next plugin for a name outside our zones), or
	// SERVFAIL before the cache has synced.
	Fallthrough, Refused, NotSynced prometheus.Counter
}

// NewCounters takes vec's children, vec having the one label "result".
func NewCounters(vec *prometheus.CounterVec) *Counters {
	return &Counters{success: vec.WithLabelValues("success"), nodata: vec.WithLabelValues("nodata"),
		nxdomain: vec.WithLabelValues("nxdomain"), failed: vec.WithLabelValues("error"),
		Fallthrough: vec.WithLabelValues("fallthrough"), Refused: vec.WithLabelValues("refused"),
		NotSynced: vec.WithLabelValues("not_synced")}
}

// Count counts one reply, by Result.
func (c *Counters) Count(rcode, answers int) {
	switch {
	case rcode == dns.RcodeNameError:
		c.nxdomain.Inc()
	case rcode != dns.RcodeSuccess:
		c.failed.Inc()
	case answers == 0:
		c.nodata.Inc()
	default:
		c.success.Inc()
	}
}

// IsReverse tells whether zone is under in-addr.arpa or ip6.arpa.
func IsReverse(zone string) bool {
	return strings.HasSuffix(zone, "in-addr.arpa.") || strings.HasSuffix(zone, "ip6.arpa.")
}

// Zones normalises the zones of a stanza: lower case, fully qualified,
// CIDRs turned into reverse zones; defaults (the server block's keys, or a
// plugin's own default zone) when args is empty.
func Zones(args, defaults []string) ([]string, error) {
	for _, a := range args {
		if _, err := netip.ParsePrefix(a); err == nil {
			continue
		}
		if _, ok := dns.IsDomainName(a); !ok || strings.ContainsAny(a, "/:@ ") {
			return nil, fmt.Errorf("zone %q is not a domain name", a)
		}
	}
	zones := plugin.OriginsFromArgsOrServerBlock(args, defaults)
	for i, z := range zones {
		zones[i] = strings.ToLower(z)
	}
	return zones, nil
}

// ListenAddrs are the addresses a server's own name (ns.dns.<zone>)
// answers with: those the server block binds, or else this host's unicast
// addresses (loopback when it has none).
func ListenAddrs(hosts []string) []netip.Addr {
	var out []netip.Addr
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil && !a.IsUnspecified() {
			out = append(out, a.Unmap())
		}
	}
	if len(out) > 0 {
		return out
	}
	ifaddrs, _ := net.InterfaceAddrs()
	for _, ia := range ifaddrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().IsGlobalUnicast() {
			out = append(out, p.Addr().Unmap())
		}
	}
	if len(out) == 0 {
		out = append(out, netip.MustParseAddr("127.0.0.1"))
	}
	return out
}

// NextSerial is a SOA serial newer than prev: the current Unix time, or
// prev+1 when changes come faster than once a second.
func NextSerial(prev uint32) uint32 {
	now := uint32(time.Now().Unix())
	if now <= prev {
		return prev + 1
	}
	return now
}

// WithSerial is a copy of soa with another serial.
func WithSerial(soa *dns.SOA, serial uint32) *dns.SOA {
	c := *soa
	c.Serial = serial
	return &c
}

// Apex answers the zone apex: SOA, NS (with the nameserver's addresses as
// additional records) or both for ANY; nil for any other type (NODATA).
func Apex(qtype uint16, soa dns.RR, ns, nsA, nsAAAA []dns.RR) (ans, extra []dns.RR) {
	switch qtype {
	case dns.TypeSOA:
		return []dns.RR{soa}, nil
	case dns.TypeNS:
		return ns, append(append([]dns.RR(nil), nsA...), nsAAAA...)
	case dns.TypeANY:
		return append([]dns.RR{soa}, ns...), nil
	}
	return nil, nil
}

// ForType is rrs when qtype is want or ANY, else nil (NODATA).
func ForType(qtype, want uint16, rrs []dns.RR) []dns.RR {
	if qtype == want || qtype == dns.TypeANY {
		return rrs
	}
	return nil
}

// Addrs answers A or AAAA from address records, rotated by turn, and ANY
// with both plus more (a service's SRV records); nil for other types.
func Addrs(qtype uint16, a, aaaa []dns.RR, turn *atomic.Uint32, more ...dns.RR) []dns.RR {
	switch qtype {
	case dns.TypeA:
		return Rotate(a, turn)
	case dns.TypeAAAA:
		return Rotate(aaaa, turn)
	case dns.TypeANY:
		all := make([]dns.RR, 0, len(a)+len(aaaa)+len(more))
		return append(append(append(all, a...), aaaa...), more...)
	}
	return nil
}
