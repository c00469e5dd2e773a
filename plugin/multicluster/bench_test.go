package multicluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// BenchmarkServeDNS is ServeDNS per kind of answer, the reply dropped.
// sts is a headless import of ten endpoints with hostnames, five in each
// of two clusters.
//
//	go test -run '^$' -bench ServeDNS -benchmem ./plugin/multicluster
func BenchmarkServeDNS(b *testing.B) {
	src := fixture(b)
	src.Add(b, headlessImport("ns1", "sts", port("pg", corev1.ProtocolTCP, 5432)))
	for _, cluster := range []string{"cluster-a", "cluster-b"} {
		eps := make([]ep, 5)
		for i := range eps {
			eps[i] = ep{addr: fmt.Sprintf("10.4.%d.%d", len(cluster), i+1), host: fmt.Sprintf("sts-%d", i)}
		}
		if cluster == "cluster-b" {
			for i := range eps {
				eps[i].addr = fmt.Sprintf("10.5.0.%d", i+1)
			}
		}
		src.Add(b, importedSlice("ns1", "sts-"+cluster, "sts", cluster, 5432, eps...))
	}
	m := newTestPlugin(b, src)
	for _, q := range []struct {
		kind, name string
		qtype      uint16
		answers    int
	}{
		{"ClusterSetIP_A", "web.ns1.svc.clusterset.local.", dns.TypeA, 1},
		{"ClusterSetIP_AAAA", "web.ns1.svc.clusterset.local.", dns.TypeAAAA, 1},
		{"SRV_ClusterSetIP", "_http._tcp.web.ns1.svc.clusterset.local.", dns.TypeSRV, 1},
		{"headless_A_10", "sts.ns1.svc.clusterset.local.", dns.TypeA, 10},
		{"SRV_headless_10", "_pg._tcp.sts.ns1.svc.clusterset.local.", dns.TypeSRV, 10},
		{"PTR_ClusterSetIP", "10.0.42.10.in-addr.arpa.", dns.TypePTR, 1},
		{"PTR_headless", "1.0.5.10.in-addr.arpa.", dns.TypePTR, 1},
	} {
		msg := new(dns.Msg)
		msg.SetQuestion(q.name, q.qtype)
		b.Run(q.kind, func(b *testing.B) {
			rec := &recorder{}
			m.ServeDNS(context.Background(), rec, msg)
			if rec.msg == nil || len(rec.msg.Answer) != q.answers {
				b.Fatalf("%s: want %d answers: %v", strings.TrimSpace(msg.Question[0].String()), q.answers, rec.msg)
			}
			b.ReportAllocs()
			ctx := context.Background()
			w := &test.ResponseWriter{}
			for b.Loop() {
				m.ServeDNS(ctx, w, msg)
			}
		})
	}
}

// recorder keeps the reply.
type recorder struct {
	test.ResponseWriter
	msg *dns.Msg
}

func (r *recorder) WriteMsg(m *dns.Msg) error { r.msg = m; return nil }
