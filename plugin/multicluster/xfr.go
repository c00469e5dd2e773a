package multicluster

import (
	"sort"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/plugin/pkg/answer"
)

// Transfer implements transfer.Transferer: AXFR of a forward zone from the
// current snapshot. An IXFR with a serial at least ours gets the SOA alone
// (nothing changed); anything else gets the whole zone.
func (m *Multicluster) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	snap := m.snap.Load()
	zi := answer.ZoneIndex(m.Zones, zone)
	if zi < 0 || snap == nil || snap.zones[zi].reverse {
		return nil, answer.ErrNotAuthoritative
	}
	z := snap.zones[zi]
	apex := [][]dns.RR{z.ns, append(append(append([]dns.RR(nil), z.nsA...), z.nsAAAA...), z.version...)}
	return answer.Transfer(z.soa, serial, apex, func(send func([]dns.RR)) {
		keys := make([]string, 0, len(z.imports))
		for key := range z.imports {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			send(importRRs(z.imports[key]))
		}
	}), nil
}

// importRRs lists every record of one import, for a transfer.
func importRRs(r *importRecords) []dns.RR {
	out := append(append([]dns.RR(nil), r.a...), r.aaaa...)
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
