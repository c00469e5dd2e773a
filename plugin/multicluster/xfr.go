package multicluster

import (
	"sort"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
)

// Transfer implements transfer.Transferer: AXFR of a forward zone from the
// current snapshot. An IXFR with a serial at least ours gets the SOA alone
// (nothing changed); anything else gets the whole zone.
func (m *Multicluster) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	snap := m.snap.Load()
	zi := -1
	for i, z := range m.Zones {
		if z == zone {
			zi = i
		}
	}
	if zi < 0 || snap == nil || snap.zones[zi].reverse {
		return nil, transfer.ErrNotAuthoritative
	}
	z := snap.zones[zi]
	ch := make(chan []dns.RR)
	go func() {
		defer close(ch)
		ch <- []dns.RR{z.soa}
		if serial != 0 && serial >= z.soa.Serial {
			return
		}
		ch <- z.ns
		ch <- append(append(append([]dns.RR(nil), z.nsA...), z.nsAAAA...), z.version...)
		keys := make([]string, 0, len(z.imports))
		for key := range z.imports {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			ch <- importRRs(z.imports[key])
		}
		ch <- []dns.RR{z.soa}
	}()
	return ch, nil
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
