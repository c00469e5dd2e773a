package kubeschema

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// discard is a ResponseWriter that drops the reply, so the benchmark
// measures the handler, not packing.
type discard struct{ test.ResponseWriter }

func (*discard) WriteMsg(*dns.Msg) error { return nil }

// benchFixture is the test fixture with two headless services of ten
// ready endpoints each: sts, a StatefulSet's (every endpoint has a
// hostname), and deploy, a Deployment's (dashed names).
func benchFixture(t testing.TB) *memSource {
	m := fixture(t)
	for _, s := range []struct {
		name  string
		named bool
	}{{"sts", true}, {"deploy", false}} {
		eps := make([]ep, 10)
		for i := range eps {
			eps[i] = ep{addr: fmt.Sprintf("10.3.%d.%d", len(s.name), i+1)}
			if s.named {
				eps[i].host = fmt.Sprintf("%s-%d", s.name, i)
			}
		}
		m.Add(t, service("ns1", s.name, headless(corev1.ServicePort{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432})),
			slice("ns1", s.name+"-1", s.name, discoveryv1.AddressTypeIPv4, eps...))
	}
	return m
}

// BenchmarkServeDNS is ServeDNS per kind of answer, the reply dropped:
//
//	go test -run '^$' -bench ServeDNS -benchmem ./plugin/kubeschema
func BenchmarkServeDNS(b *testing.B) {
	k := newTestPlugin(b, nil)
	k.data = benchFixture(b)
	k.Publish(newBuilder(k, k.data).fullBuild())
	for _, q := range []struct {
		kind, name string
		qtype      uint16
		answers    int
	}{
		{"ClusterIP_A", "web.ns1.svc.cluster.local.", dns.TypeA, 1},
		{"ClusterIP_AAAA", "web.ns1.svc.cluster.local.", dns.TypeAAAA, 1},
		{"headless_A_2", "db.ns1.svc.cluster.local.", dns.TypeA, 2},
		{"headless_A_10", "deploy.ns1.svc.cluster.local.", dns.TypeA, 10},
		{"SRV_ClusterIP", "_http._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV, 1},
		{"SRV_ClusterIP_all_ports", "web.ns1.svc.cluster.local.", dns.TypeSRV, 2},
		{"SRV_headless_10_hostnames", "_pg._tcp.sts.ns1.svc.cluster.local.", dns.TypeSRV, 10},
		{"SRV_headless_10_dashed", "_pg._tcp.deploy.ns1.svc.cluster.local.", dns.TypeSRV, 10},
		{"SRV_headless_10_name", "sts.ns1.svc.cluster.local.", dns.TypeSRV, 10},
		{"PTR_ClusterIP", "10.0.96.10.in-addr.arpa.", dns.TypePTR, 1},
		{"PTR_headless", "1.6.3.10.in-addr.arpa.", dns.TypePTR, 1},
		{"ExternalName_CNAME", "ext.ns1.svc.cluster.local.", dns.TypeCNAME, 1},
		{"ExternalName_A", "ext.ns1.svc.cluster.local.", dns.TypeA, 2},
		{"pod_A", "10-2-0-5.ns1.pod.cluster.local.", dns.TypeA, 1},
		{"host_A_hostname", "sts-3.sts.ns1.svc.cluster.local.", dns.TypeA, 1},
		{"host_A_dashed", "10-3-6-4.deploy.ns1.svc.cluster.local.", dns.TypeA, 1},
		{"NODATA", "v6only.ns1.svc.cluster.local.", dns.TypeA, 0},
		{"NXDOMAIN", "google.com.ns1.svc.cluster.local.", dns.TypeA, 0},
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		b.Run(q.kind, func(b *testing.B) {
			benchServe(b, k, m, q.answers)
		})
	}
}

// benchServe runs h.ServeDNS on m, after checking that the reply has the
// number of answers the case is named for.
func benchServe(b *testing.B, k *Kubeschema, m *dns.Msg, answers int) {
	rec := &recorder{}
	k.ServeDNS(context.Background(), rec, m)
	if rec.msg == nil || len(rec.msg.Answer) != answers {
		b.Fatalf("%s: %d answers, want %d: %v", strings.TrimSpace(m.Question[0].String()), len(rec.msg.Answer), answers, rec.msg)
	}
	b.ReportAllocs()
	ctx := context.Background()
	w := &discard{}
	for b.Loop() {
		k.ServeDNS(ctx, w, m)
	}
}

// recorder keeps the reply.
type recorder struct {
	test.ResponseWriter
	msg *dns.Msg
}

func (r *recorder) WriteMsg(m *dns.Msg) error { r.msg = m; return nil }
