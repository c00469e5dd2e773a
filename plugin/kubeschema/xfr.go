package kubeschema

import (
	"sort"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/plugin/pkg/answer"
)

// Transfer implements transfer.Transferer: AXFR of a forward zone from the
// current snapshot. An IXFR with a serial at least ours gets the SOA alone
// (nothing changed); anything else gets the whole zone.
func (k *Kubeschema) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	snap := k.snap.Load()
	zi := answer.ZoneIndex(k.Zones, zone)
	if zi < 0 || snap == nil || snap.zones[zi].reverse {
		return nil, answer.ErrNotAuthoritative
	}
	z := snap.zones[zi]
	apex := [][]dns.RR{z.ns, append(append(append([]dns.RR(nil), z.nsA...), z.nsAAAA...), z.version...)}
	return answer.Transfer(z.soa, serial, apex, func(send func([]dns.RR)) {
		for _, r := range sortedServices(z) {
			send(serviceRRs(r))
		}
	}), nil
}

// sortedServices lists the zone's services in the order of their names
// "<svc>.<ns>" part, as transfers always sent them.
func sortedServices(z *zoneData) []*serviceRecords {
	type named struct {
		key string
		r   *serviceRecords
	}
	var all []named
	for ns, m := range z.services {
		for name, r := range m {
			all = append(all, named{name + "." + ns, r})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	out := make([]*serviceRecords, len(all))
	for i, n := range all {
		out[i] = n.r
	}
	return out
}

// serviceRRs lists every record of one service, for a transfer.
func serviceRRs(r *serviceRecords) []dns.RR {
	var out []dns.RR
	if r.cname != nil {
		return []dns.RR{r.cname}
	}
	out = append(append(out, r.a...), r.aaaa...)
	hosts := make([]string, 0, len(r.hosts))
	for h := range r.hosts {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		out = append(append(out, r.hosts[h].a...), r.hosts[h].aaaa...)
	}
	return append(out, r.srv...)
}
