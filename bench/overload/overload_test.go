package main

import (
	"context"
	"math"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestRunLoad offers a load to a loopback server that answers cluster
// names and refuses the rest, and checks every query is counted once, by
// kind and rcode.
func TestRunLoad(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if !strings.HasSuffix(r.Question[0].Name, ".cluster.local.") {
			m.Rcode = dns.RcodeRefused
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	defer srv.Shutdown()
	pool := &queryPool{external: packQuery("x00000000.overload.test."), counterAt: 13}
	for _, n := range []string{"a.ns.svc.cluster.local.", "b.ns.svc.cluster.local."} {
		pool.names = append(pool.names, n)
		pool.cluster = append(pool.cluster, packQuery(n))
	}
	ended := false
	spec := loadSpec{server: netip.MustParseAddrPort(pc.LocalAddr().String()), rate: 2000, duration: time.Second, external: 0.25,
		clients: 4, timeout: 500 * time.Millisecond, queries: pool, onEnd: func(time.Time) { ended = true }}
	r, err := runLoad(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !ended {
		t.Error("onEnd was not called")
	}
	if r.Offered < 1900 || r.Offered > 2000 || r.Sent != r.Offered {
		t.Fatalf("offered %d, sent %d: want about 2000 each", r.Offered, r.Sent)
	}
	if r.Queries[kindExternal] != r.Offered/4 && r.Queries[kindExternal] != r.Offered/4+1 {
		t.Errorf("external queries %d of %d: want a quarter", r.Queries[kindExternal], r.Offered)
	}
	for k := range kinds {
		if r.Answered[k] != r.Queries[k] {
			t.Errorf("kind %d: %d answered of %d", k, r.Answered[k], r.Queries[k])
		}
	}
	if r.Good[kindCluster] != r.Queries[kindCluster] || r.Good[kindExternal] != 0 {
		t.Errorf("good %v: want every cluster answer and no external one", r.Good)
	}
	if got := r.Rcodes[kindExternal]["REFUSED"]; got != r.Queries[kindExternal] {
		t.Errorf("REFUSED %d: want %d", got, r.Queries[kindExternal])
	}
	slots := 0
	for _, s := range r.Slots {
		slots += s[kindCluster]
	}
	if slots != r.Good[kindCluster] || r.latency.n != r.Good[kindCluster] {
		t.Errorf("timeline %d and latency count %d: want %d", slots, r.latency.n, r.Good[kindCluster])
	}
	if p := r.latency.quantile(0.5); p <= 0 || p > 100 {
		t.Errorf("p50 %.3f ms", p)
	}
}

func TestHistogram(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 17 * time.Microsecond, 100 * time.Microsecond, 3 * time.Millisecond,
		25 * time.Millisecond, 1500 * time.Millisecond, time.Hour} {
		got := bucketValue(bucketOf(d))
		if err := math.Abs(float64(got-d)) / float64(d); err > 0.032 {
			t.Errorf("%s lands in a bucket worth %s (%.1f%% off)", d, got, 100*err)
		}
	}
	var h histogram
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	if p := h.quantile(0.99); math.Abs(p-99) > 3 {
		t.Errorf("p99 of 1..100 ms: %.2f", p)
	}
}

func TestDeployCorefile(t *testing.T) {
	p := ports{dns: 1053, health: 1080, ready: 1081, metrics: 1082}
	for _, admission := range []bool{true, false} {
		text, err := deployCorefile("../../deploy/base/Corefile", p, "/kc", "127.0.0.2:5300", admission)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{".:1053 {", "bind 127.0.0.1", "health 127.0.0.1:1080", "ready 127.0.0.1:1081",
			"prometheus 127.0.0.1:1082", "kubeconfig /kc", "pods insecure", "forward . 127.0.0.2:5300"} {
			if !strings.Contains(text, want) {
				t.Errorf("admission %v: no %q in\n%s", admission, want, text)
			}
		}
		for _, not := range []string{"import", "/etc/resolv.conf", ":9153"} {
			if strings.Contains(text, not) {
				t.Errorf("admission %v: %q left in\n%s", admission, not, text)
			}
		}
		if !admission && strings.Contains(text, "clusterfirst") {
			t.Errorf("clusterfirst left in\n%s", text)
		}
	}
}

func TestDropBlock(t *testing.T) {
	in := ".:53 {\n    a\n    clusterfirst {\n        target 5ms\n    }\n    b\n    clusterfirst\n}\n"
	if got, want := dropBlock(in, "clusterfirst"), ".:53 {\n    a\n    b\n}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestWithSockets: deploy/base's own multisocket line gives way to the
// case's count, or to none.
func TestWithSockets(t *testing.T) {
	base := serverConfigs("../..")[keyOurs]
	p := ports{dns: 1053, health: 1080, ready: 1081, metrics: 1082}
	for n, want := range map[int]int{1: 0, 2: 1} {
		text, err := withSockets(base, n).corefile(p, "/kc", "127.0.0.2:5300")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(text, "multisocket"); got != want || (n > 1 && !strings.Contains(text, "multisocket 2")) {
			t.Errorf("%d sockets: %d multisocket lines in\n%s", n, got, text)
		}
	}
}
