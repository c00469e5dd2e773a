package kubeschema

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// discard is a ResponseWriter that drops the reply, so the benchmark
// measures the handler, not packing.
type discard struct{ test.ResponseWriter }

func (*discard) WriteMsg(*dns.Msg) error { return nil }

func BenchmarkServeDNS(b *testing.B) {
	k := newTestPlugin(b, nil)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"web.ns1.svc.cluster.local.", dns.TypeA},
		{"db.ns1.svc.cluster.local.", dns.TypeA},
		{"_pg._tcp.db.ns1.svc.cluster.local.", dns.TypeSRV},
		{"web.ns1.svc.cluster.local.", dns.TypeAAAA},
		{"v6only.ns1.svc.cluster.local.", dns.TypeA}, // NODATA
		{"google.com.ns1.svc.cluster.local.", dns.TypeA},
		{"10.0.96.10.in-addr.arpa.", dns.TypePTR},
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		b.Run(q.name+"/"+dns.TypeToString[q.qtype], func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			w := &discard{}
			for b.Loop() {
				k.ServeDNS(ctx, w, m)
			}
		})
	}
}
