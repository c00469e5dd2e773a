package dnszone

import (
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// Transfer implements transfer.Transferer: AXFR of a forward zone from the
// current snapshot. An IXFR with a serial at least ours gets the SOA alone
// (nothing changed); anything else gets the whole zone: the SOA, the apex
// records, every service's (or record set's) records in name order, and
// the SOA again.
func (srv *Server) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	snap := srv.snap.Load()
	zi := srv.zoneOf(zone)
	if zi < 0 || snap == nil || dnsname.IsReverseZone(zone) {
		return nil, transfer.ErrNotAuthoritative
	}
	soaRR := srv.soa(snap, zi, zone)
	soa := &soaRR
	ch := make(chan []dns.RR)
	go func() {
		defer close(ch)
		ch <- []dns.RR{soa}
		if serial != 0 && serial >= soa.Serial {
			return
		}
		ns := srv.nsName(zone)
		ch <- []dns.RR{&dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: srv.TTL}, Ns: ns}}
		if srv.Names == ServiceNames {
			// The grammar's own names; a record set's nameserver name is a
			// record set like any other.
			version := &dns.TXT{Hdr: dns.RR_Header{Name: "dns-version." + zone, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: srv.TTL}, Txt: []string{srv.Version}}
			ch <- append(srv.nsAddrRecords(ns, true, true), version)
		}
		for _, svc := range snap.Services() {
			ch <- srv.Records(svc, zone)
		}
		ch <- []dns.RR{soa}
	}()
	return ch, nil
}

// Records lists every record of svc under zone, for a transfer: its
// addresses, each host name's addresses in name order, its SRV records
// (a service's: svcrender.go; a record set's: records.go).
func (srv *Server) Records(svc *Facts, zone string) []dns.RR {
	if svc.kind == Records {
		return srv.recordSetRecords(svc, zone)
	}
	return srv.serviceRecords(svc, zone)
}

func (srv *Server) zoneOf(zone string) int {
	for i, z := range srv.Zones {
		if z == zone {
			return i
		}
	}
	return -1
}
