package kubeschema

import (
	"strings"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/answer"
)

// Timers of the SOA, as CoreDNS's kubernetes plugin has them.
const (
	soaRefresh = 7200
	soaRetry   = 1800
	soaExpire  = 86400
)

// nsName is the nameserver name, ns.dns.<zone> of the first forward zone
// (reverse zones point there too).
func (k *Kubeschema) nsName(zone string) string {
	if !answer.IsReverse(zone) {
		return "ns.dns." + zone
	}
	for _, z := range k.Zones {
		if !answer.IsReverse(z) {
			return "ns.dns." + z
		}
	}
	return "ns.dns." + zone
}

// emptySnapshot holds the fixed records of each zone and no services.
func (k *Kubeschema) emptySnapshot(serial uint32) *snapshot {
	s := &snapshot{serial: serial}
	ttl := k.opts.ttl
	for _, zone := range k.Zones {
		ns := k.nsName(zone)
		z := &zoneData{origin: zone, reverse: answer.IsReverse(zone), services: map[string]map[string]*serviceRecords{}}
		z.soa = &dns.SOA{Hdr: answer.Hdr(zone, dns.TypeSOA, ttl), Ns: ns, Mbox: "hostmaster." + strings.TrimPrefix(ns, "ns.dns."),
			Serial: serial, Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire, Minttl: ttl}
		z.negative = []dns.RR{z.soa}
		z.ns = []dns.RR{&dns.NS{Hdr: answer.Hdr(zone, dns.TypeNS, ttl), Ns: ns}}
		if !z.reverse {
			z.nsA, z.nsAAAA = answer.AddrRecords(ns, k.nsAddrs, ttl)
			z.version = []dns.RR{&dns.TXT{Hdr: answer.Hdr("dns-version."+zone, dns.TypeTXT, ttl), Txt: []string{SchemaVersion}}}
		}
		s.zones = append(s.zones, z)
	}
	return s
}
