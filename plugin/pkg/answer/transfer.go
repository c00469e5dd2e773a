package answer

import (
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
)

// ZoneIndex is the index of zone in zones, or -1: transfers name a zone
// exactly.
func ZoneIndex(zones []string, zone string) int {
	for i, z := range zones {
		if z == zone {
			return i
		}
	}
	return -1
}

// Transfer streams a zone for transfer.Transferer, the way both plugins
// serve it from a snapshot: the SOA; then, unless the client's IXFR serial
// is already ours (nothing changed, the SOA alone says so), the apex sets,
// the records body sends in a stable order, and the SOA again.
func Transfer(soa *dns.SOA, serial uint32, apex [][]dns.RR, body func(send func([]dns.RR))) <-chan []dns.RR {
	ch := make(chan []dns.RR)
	go func() {
		defer close(ch)
		ch <- []dns.RR{soa}
		if serial != 0 && serial >= soa.Serial {
			return
		}
		for _, rrs := range apex {
			ch <- rrs
		}
		body(func(rrs []dns.RR) { ch <- rrs })
		ch <- []dns.RR{soa}
	}()
	return ch
}

// ErrNotAuthoritative is transfer's answer for a zone not served.
var ErrNotAuthoritative = transfer.ErrNotAuthoritative
