package kubeschema

import (
	"context"
	"net"
	"testing"

	"github.com/miekg/dns"
)

// BenchmarkServeUDP is ServeDNS under a miekg/dns UDP server, which runs
// each query on a fresh goroutine, queried over loopback one query at a
// time: the benchmark to profile for stack growth (runtime.newstack and
// copystack under the query path), which the in-process ones cannot show.
//
//	go test -run '^$' -bench ServeUDP -cpuprofile cpu.out ./plugin/kubeschema
//	go tool pprof -peek 'runtime.newstack$' cpu.out
func BenchmarkServeUDP(b *testing.B) {
	k := newTestPlugin(b, nil)
	k.data = benchFixture(b)
	k.Publish(newBuilder(k, k.data).fullBuild())
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	started := make(chan struct{})
	s := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { k.ServeDNS(context.Background(), w, r) })}
	go s.ActivateAndServe()
	defer s.Shutdown()
	<-started
	for _, q := range []struct {
		kind, name string
		qtype      uint16
	}{
		{"ClusterIP_A", "web.ns1.svc.cluster.local.", dns.TypeA},
		{"headless_A_10", "deploy.ns1.svc.cluster.local.", dns.TypeA},
		{"SRV_headless_10", "_pg._tcp.sts.ns1.svc.cluster.local.", dns.TypeSRV},
		{"PTR", "10.0.96.10.in-addr.arpa.", dns.TypePTR},
	} {
		b.Run(q.kind, func(b *testing.B) {
			c, err := dns.Dial("udp", pc.LocalAddr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			c.UDPSize = dns.MaxMsgSize
			m := new(dns.Msg)
			m.SetQuestion(q.name, q.qtype)
			for b.Loop() {
				if err := c.WriteMsg(m); err != nil {
					b.Fatal(err)
				}
				if _, err := c.ReadMsg(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
