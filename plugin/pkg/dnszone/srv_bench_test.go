package dnszone

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// BenchmarkHeadlessSRV is the SRV answer of a headless service name of
// ten endpoints, with StatefulSet hostnames and without (dashed labels).
//
//	go test -run '^$' -bench HeadlessSRV -benchmem ./plugin/pkg/dnszone
func BenchmarkHeadlessSRV(b *testing.B) {
	for _, named := range []bool{true, false} {
		b.Run(fmt.Sprintf("hostnames=%v", named), func(b *testing.B) {
			eps := make([]EndpointFacts, 10)
			for i := range eps {
				host := ""
				if named {
					host = fmt.Sprintf("db-%d", i)
				}
				eps[i] = NewEndpoint(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), host, 0, true)
			}
			svc := NewHeadless("db.ns1", eps, []SRVPort{{Name: "pg", Proto: "tcp", Number: 5432}}, nil)
			srv := testServer(false, svc)
			q := &Query{Snap: srv.Snapshot(), Qtype: dns.TypeSRV, Owner: "db.ns1.svc.cluster.local.", Lower: "db.ns1.svc.cluster.local."}
			b.ReportAllocs()
			for b.Loop() {
				srv.srvAnswer(q, svc, -1, q.Lower, svc.nameSelection(), "")
			}
		})
	}
}
