package test

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// herdUpstream is a loopback DNS server over TCP, as node-local reaches the
// cluster DNS (force_tcp), that answers every query and notes when each
// query of the stream came; it can be stopped (its port then refuses with a
// reset, which the kernel does not rate-limit as it does the ICMP port
// unreachable of UDP) and started again on the same port.
type herdUpstream struct {
	addr string
	mu   sync.Mutex
	srv  *dns.Server
	seen []time.Time // arrivals of the stream's queries, bounded by herdMaxSeen
}

// herdMaxSeen bounds what the upstream notes.
const herdMaxSeen = 1 << 20

func (u *herdUpstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	if len(r.Question) == 1 && strings.HasSuffix(r.Question[0].Name, ".herd.test.") {
		u.mu.Lock()
		if len(u.seen) < herdMaxSeen {
			u.seen = append(u.seen, time.Now())
		}
		u.mu.Unlock()
	}
	m := new(dns.Msg).SetReply(r)
	if len(r.Question) == 1 && r.Question[0].Qtype == dns.TypeA {
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.IPv4(10, 0, 0, 1)}}
	}
	w.WriteMsg(m)
}

func (u *herdUpstream) start(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", u.addr)
	if err != nil {
		t.Fatalf("upstream on %s: %v", u.addr, err)
	}
	u.addr = l.Addr().String()
	started := make(chan struct{})
	srv := &dns.Server{Listener: l, Handler: u, NotifyStartedFunc: func() { close(started) }}
	go srv.ActivateAndServe()
	<-started
	u.mu.Lock()
	u.srv = srv
	u.mu.Unlock()
}

func (u *herdUpstream) stop() {
	u.mu.Lock()
	srv := u.srv
	u.srv = nil
	u.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
	}
}

// arrivals is a copy of the arrivals noted so far.
func (u *herdUpstream) arrivals() []time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// herdWindow is the width of the windows the upstream's load is counted in.
const herdWindow = 300 * time.Millisecond

// busiest is the most arrivals in any herdWindow that starts in [from, to).
func busiest(seen []time.Time, from, to time.Time) int {
	most, j := 0, 0
	for i, a := range seen {
		if a.Before(from) || !a.Before(to) {
			continue
		}
		j = max(j, i)
		for j < len(seen) && seen[j].Sub(a) < herdWindow {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// count is the arrivals in [from, to).
func arrivalsIn(seen []time.Time, from, to time.Time) int {
	n := 0
	for _, a := range seen {
		if !a.Before(from) && a.Before(to) {
			n++
		}
	}
	return n
}

// herdStream sends new names to one node-local cache at rate per second
// until stop is closed, and drains the replies; at most max queries.
func herdStream(t *testing.T, addr string, node, rate, most int, stop <-chan struct{}, wg *sync.WaitGroup) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Errorf("node %d: %v", node, err)
		wg.Done()
		return
	}
	go func() { // replies are not looked at: the upstream's count is the point
		buf := make([]byte, 1500)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		defer conn.Close()
		// A ticker drops the ticks a busy machine misses, so the stream's
		// rate is never made up in bursts.
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; i < most; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			m := new(dns.Msg).SetQuestion(fmt.Sprintf("n%d-q%d.herd.test.", node, i), dns.TypeA)
			b, _ := m.Pack()
			conn.Write(b)
		}
	}()
}

// TestHoldHerd: many node-local caches (hold in front of forward, each a
// CoreDNS server of its own) with a steady stream of new names each, in
// front of one upstream that refuses for 10 s and then comes back all at
// once. The upstream's busiest 300 ms after it is back holds at most 3
// times its steady load before the outage: the held queries do not all
// come back together.
func TestHoldHerd(t *testing.T) {
	const (
		nodes  = 10
		rate   = 30 // new names per second and node
		steady = 3 * time.Second
		outage = 10 * time.Second
		after  = 3 * time.Second
	)
	up := &herdUpstream{addr: "127.0.0.1:0"}
	up.start(t)
	t.Cleanup(up.stop)
	var addrs []string
	for range nodes {
		s := startServer(t, fmt.Sprintf(".:0 {\n    bind 127.0.0.1\n    hold\n    forward . %s {\n        force_tcp\n    }\n}\n", up.addr))
		addrs = append(addrs, s.UDP)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(nodes)
	most := rate * int((steady+outage+after)/time.Second+5)
	for i, a := range addrs {
		herdStream(t, a, i, rate, most, stop, &wg)
	}
	// The first second warms forward's connections up.
	time.Sleep(time.Second)
	steadyFrom := time.Now()
	time.Sleep(steady)
	down := time.Now()
	up.stop()
	time.Sleep(outage)
	back := time.Now()
	up.start(t)
	time.Sleep(after)
	close(stop)
	wg.Wait()

	seen := up.arrivals()
	base := float64(arrivalsIn(seen, steadyFrom, down)) * float64(herdWindow) / float64(down.Sub(steadyFrom))
	peak := busiest(seen, back, back.Add(after-herdWindow))
	ratio := float64(peak) / base
	t.Logf("%d nodes at %d new names/s each: the upstream got %.0f queries per %s before the outage; after %s of outage its busiest %s had %d (%.1fx), %d in the %s after",
		nodes, rate, base, herdWindow, outage, herdWindow, peak, ratio, arrivalsIn(seen, back, back.Add(after)), after)
	if base < nodes*rate*herdWindow.Seconds()/2 {
		t.Fatalf("steady load %.0f per %s, want about %.0f: the machine is too busy to measure", base, herdWindow, nodes*rate*herdWindow.Seconds())
	}
	if ratio > 3 {
		t.Errorf("busiest %s after the outage: %d queries, %.1f times the steady %.0f; want at most 3 times", herdWindow, peak, ratio, base)
	}
}
