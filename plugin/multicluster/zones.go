package multicluster

import (
	"maps"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/answer"
)

// Timers of the SOA, as kubeschema (and CoreDNS's kubernetes plugin) has them.
const (
	soaRefresh = 7200
	soaRetry   = 1800
	soaExpire  = 86400
)

// nsName is the nameserver name, ns.dns.<zone> of the first forward zone
// (reverse zones point there too).
func (m *Multicluster) nsName(zone string) string {
	if !answer.IsReverse(zone) {
		return "ns.dns." + zone
	}
	return "ns.dns." + m.forwardZone()
}

// forwardZone is the first forward zone: PTR records point into it. Setup
// makes sure there is one.
func (m *Multicluster) forwardZone() string {
	for _, z := range m.Zones {
		if !answer.IsReverse(z) {
			return z
		}
	}
	return ""
}

// emptySnapshot holds the fixed records of each zone and no imports.
func (m *Multicluster) emptySnapshot(serial uint32) *snapshot {
	s := &snapshot{ptr: map[netip.Addr]*dns.PTR{}, serial: serial}
	ttl := m.ttl
	for _, zone := range m.Zones {
		ns := m.nsName(zone)
		z := &zoneData{origin: zone, reverse: answer.IsReverse(zone), imports: map[string]*importRecords{}, namespaces: map[string]int{}}
		z.soa = &dns.SOA{Hdr: answer.Hdr(zone, dns.TypeSOA, ttl), Ns: ns, Mbox: "hostmaster." + strings.TrimPrefix(ns, "ns.dns."),
			Serial: serial, Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire, Minttl: ttl}
		z.negative = []dns.RR{z.soa}
		z.ns = []dns.RR{&dns.NS{Hdr: answer.Hdr(zone, dns.TypeNS, ttl), Ns: ns}}
		if !z.reverse {
			z.nsA, z.nsAAAA = answer.AddrRecords(ns, m.nsAddrs, ttl)
			z.version = []dns.RR{&dns.TXT{Hdr: answer.Hdr("dns-version."+zone, dns.TypeTXT, ttl), Txt: []string{SchemaVersion}}}
		}
		s.zones = append(s.zones, z)
	}
	return s
}

// clone copies the maps (not the records) so they can be changed.
func (s *snapshot) clone(serial uint32) *snapshot {
	n := &snapshot{ptr: maps.Clone(s.ptr), serial: serial}
	for _, z := range s.zones {
		nz := *z
		nz.imports, nz.namespaces = maps.Clone(z.imports), maps.Clone(z.namespaces)
		nz.soa = answer.WithSerial(z.soa, serial)
		nz.negative = []dns.RR{nz.soa}
		n.zones = append(n.zones, &nz)
	}
	return n
}

// remove drops an import ("<ns>/<name>") from every zone.
func (s *snapshot) remove(key string) {
	ns, name, _ := strings.Cut(key, "/")
	for _, z := range s.zones {
		if _, ok := z.imports[name+"."+ns]; !ok {
			continue
		}
		delete(z.imports, name+"."+ns)
		if z.namespaces[ns]--; z.namespaces[ns] <= 0 {
			delete(z.namespaces, ns)
		}
	}
}

// add puts an import's records for zone z.
func (z *zoneData) add(ns, name string, r *importRecords) {
	z.imports[name+"."+ns] = r
	z.namespaces[ns]++
}
