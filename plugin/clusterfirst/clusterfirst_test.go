package clusterfirst

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fixedOdds stands for the sampler.
type fixedOdds shedding

func (f fixedOdds) Shedding() shedding { return shedding(f) }
func (f fixedOdds) overloaded() bool   { return f != 0 }
func (fixedOdds) dropped(bool)         {}

// Odds the tests fix: none, every other name dropped, every name dropped.
var (
	shedNothing = sheddingOf(0, 0)
	shedOther   = sheddingOf(1, 0)
	shedAll     = sheddingOf(1, 1)
)

// answerer stands for the rest of the chain: it answers every query, and
// counts them.
type answerer struct{ asked int }

func (a *answerer) Name() string { return "answerer" }

func (a *answerer) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	a.asked++
	m := new(dns.Msg)
	m.SetReply(r)
	m.Answer = []dns.RR{test.A(r.Question[0].Name + " 5 IN A 10.96.0.10")}
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

func newTestHandler(sh shedding) (*Clusterfirst, *answerer) {
	next := &answerer{}
	return &Clusterfirst{Next: next, Zones: []string{"cluster.local.", "clusterset.local."}, signal: fixedOdds(sh)}, next
}

// testServer is the server label of the drops counted in the tests.
const testServer = "dns://:1053"

func TestClusterfirstServeDNS(t *testing.T) {
	const (
		cluster = "web.default.svc.cluster.local."
		other   = "www.example.com."
	)
	tests := []struct {
		level  shedding
		qname  string
		tcp    bool
		passed bool // else dropped
	}{
		{level: shedNothing, qname: cluster, passed: true},
		{level: shedNothing, qname: other, passed: true},
		{level: shedNothing, qname: other, tcp: true, passed: true},
		{level: shedOther, qname: cluster, passed: true},
		{level: shedOther, qname: "WEB.Default.SVC.Cluster.Local.", passed: true}, // 0x20
		{level: shedOther, qname: "cluster.local.", passed: true},                 // the apex
		{level: shedOther, qname: "db.ns.svc.clusterset.local.", passed: true},
		{level: shedOther, qname: other},
		{level: shedOther, qname: "notcluster.local."}, // a suffix, not a zone
		{level: shedOther, qname: "local."},
		{level: shedOther, qname: cluster, tcp: true, passed: true},
		{level: shedOther, qname: other, tcp: true, passed: true},
		{level: shedAll, qname: cluster},
		{level: shedAll, qname: other},
		{level: shedAll, qname: cluster, tcp: true, passed: true},
		{level: shedAll, qname: other, tcp: true, passed: true},
	}
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: testServer})
	for _, tc := range tests {
		proto := "udp"
		if tc.tcp {
			proto = "tcp"
		}
		t.Run(fmt.Sprintf("%s/%s/odds%x", proto, tc.qname, tc.level), func(t *testing.T) {
			cf, next := newTestHandler(tc.level)
			class := classOther
			if cf.inCluster(&dns.Msg{Question: []dns.Question{{Name: tc.qname}}}) {
				class = classCluster
			}
			before := testutil.ToFloat64(droppedTotal.WithLabelValues(testServer, class))
			w := dnstest.NewRecorder(&test.ResponseWriter{TCP: tc.tcp})
			m := new(dns.Msg)
			m.SetQuestion(tc.qname, dns.TypeA)
			rcode, err := cf.ServeDNS(ctx, w, m)
			if err != nil || rcode != dns.RcodeSuccess {
				t.Fatalf("rcode %s, error %v", dns.RcodeToString[rcode], err)
			}
			drops := testutil.ToFloat64(droppedTotal.WithLabelValues(testServer, class)) - before
			if tc.passed {
				if next.asked != 1 || w.Msg == nil || len(w.Msg.Answer) != 1 || drops != 0 {
					t.Errorf("passed on %d times, reply %v, %v drops: want the next plugin's answer", next.asked, w.Msg, drops)
				}
				return
			}
			if next.asked != 0 || w.Msg != nil || w.Len != 0 || drops != 1 {
				t.Errorf("passed on %d times, reply %v, %v drops of class %s: want nothing written and one drop", next.asked, w.Msg, drops, class)
			}
		})
	}
}

// TestClusterfirstOdds: at a drop probability of one half, about half the
// queries of the class are dropped (10,000 queries: 4,700 to 5,300 covers
// six standard deviations), and the other class is untouched.
func TestClusterfirstOdds(t *testing.T) {
	cf, next := newTestHandler(sheddingOf(1, 0.5))
	m := new(dns.Msg)
	m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	for range 10000 {
		cf.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m)
	}
	if next.asked < 4700 || next.asked > 5300 {
		t.Errorf("%d of 10000 cluster queries passed at odds 1/2", next.asked)
	}
	cf, next = newTestHandler(sheddingOf(0.5, 0))
	for range 1000 {
		cf.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m)
	}
	if next.asked != 1000 {
		t.Errorf("%d of 1000 cluster queries passed with only other names shed", next.asked)
	}
}

// A query without a question is never in the cluster zones.
func TestClusterfirstNoQuestion(t *testing.T) {
	cf, next := newTestHandler(shedOther)
	if _, err := cf.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), new(dns.Msg)); err != nil || next.asked != 0 {
		t.Errorf("error %v, passed on %d times: want a drop", err, next.asked)
	}
}

// Without a next plugin the query fails as with plugin.NextOrFailure.
func TestClusterfirstNoNext(t *testing.T) {
	cf := &Clusterfirst{signal: fixedOdds(shedNothing)}
	m := new(dns.Msg)
	m.SetQuestion("x.", dns.TypeA)
	if rcode, err := cf.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m); rcode != dns.RcodeServerFailure || err == nil {
		t.Errorf("rcode %d error %v, want SERVFAIL and an error", rcode, err)
	}
}

// silent is the next plugin of the benchmarks: it does nothing, so that
// what is measured is clusterfirst.
type silent struct{}

func (silent) Name() string { return "silent" }
func (silent) ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
	return dns.RcodeSuccess, nil
}

// udpWriter is a UDP writer whose address is made once: test's allocates
// one per call.
type udpWriter struct {
	test.ResponseWriter
	addr net.Addr
}

func (u *udpWriter) RemoteAddr() net.Addr { return u.addr }

// BenchmarkServeDNS: the cost of the plugin per query, unloaded and
// shedding, on a UDP query; unloaded it must not allocate.
func BenchmarkServeDNS(b *testing.B) {
	w := &udpWriter{addr: &net.UDPAddr{IP: net.IPv4(10, 240, 0, 1), Port: 40212}}
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: testServer})
	for _, bc := range []struct {
		name  string
		level shedding
		qname string
	}{
		{"unloaded", shedNothing, "www.example.com."},
		{"other-shed/cluster-passed", shedOther, "web.default.svc.cluster.local."},
		{"other-shed/other-dropped", shedOther, "www.example.com."},
		{"all-shed/dropped", shedAll, "web.default.svc.cluster.local."},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cf := &Clusterfirst{Next: silent{}, Zones: []string{"cluster.local.", "clusterset.local.", "in-addr.arpa.", "ip6.arpa."}, signal: fixedOdds(bc.level)}
			m := new(dns.Msg)
			m.SetQuestion(bc.qname, dns.TypeA)
			b.ReportAllocs()
			for b.Loop() {
				cf.ServeDNS(ctx, w, m)
			}
		})
	}
}

// TestServeDNSUnloadedAllocatesNothing holds the benchmark's claim.
func TestServeDNSUnloadedAllocatesNothing(t *testing.T) {
	cf := &Clusterfirst{Next: silent{}, Zones: []string{"cluster.local."}, signal: fixedOdds(shedNothing)}
	w := &udpWriter{addr: &net.UDPAddr{IP: net.IPv4(10, 240, 0, 1), Port: 40212}}
	m := new(dns.Msg)
	m.SetQuestion("www.example.com.", dns.TypeA)
	if n := testing.AllocsPerRun(100, func() { cf.ServeDNS(context.Background(), w, m) }); n != 0 {
		t.Errorf("%v allocations per query unloaded", n)
	}
}
