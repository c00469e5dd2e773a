package hold

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/forward"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/proxy"
	"github.com/coredns/coredns/plugin/pkg/transport"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// refused is a refused query as forward returns it over UDP.
var refused = &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("read", syscall.ECONNREFUSED)}

// flaky plays the upstream plugin: it fails its first fails tries with
// rcode and err, and then answers.
type flaky struct {
	fails int
	rcode int
	err   error
	tries int
}

func (f *flaky) Name() string { return "flaky" }

func (f *flaky) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	f.tries++
	if f.tries <= f.fails {
		return f.rcode, f.err
	}
	m := new(dns.Msg).SetReply(r)
	m.Answer = []dns.RR{test.A(r.Question[0].Name + " 5 IN A 10.96.0.1")}
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// writes answers with rcode itself: a reply the upstream gave.
func writes(rcode int) plugin.HandlerFunc {
	return func(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		w.WriteMsg(new(dns.Msg).SetRcode(r, rcode))
		return rcode, nil
	}
}

// fastHold holds for window with short pauses, 10 to 40 ms, a budget
// that is never reached and a retry budget that is never spent.
func fastHold(next plugin.Handler, window time.Duration) *Hold {
	return &Hold{Next: next, window: window, first: 10 * time.Millisecond, most: 40 * time.Millisecond,
		held: &budget{limits: limits{count: 1000, bytes: 1 << 30}}, retries: newRetryBudget(1, 1000, 0)}
}

func query() *dns.Msg { return new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA) }

// TestHoldRetriesUntilAnswered: refused three times, then answered: the
// client gets the answer, once, after three pauses of 10 to 40 ms.
func TestHoldRetriesUntilAnswered(t *testing.T) {
	next := &flaky{fails: 3, rcode: dns.RcodeServerFailure, err: fmt.Errorf("gensearchpath: cluster DNS: %w", refused)}
	h := fastHold(next, 2*time.Second)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	start := time.Now()
	rcode, err := h.ServeDNS(context.Background(), w, query())
	took := time.Since(start)
	if rcode != dns.RcodeSuccess || err != nil || w.Msg == nil || len(w.Msg.Answer) != 1 {
		t.Fatalf("rcode %d, error %v, reply %v", rcode, err, w.Msg)
	}
	if next.tries != 4 || took < 30*time.Millisecond || took > time.Second {
		t.Errorf("%d tries in %s, want 4 in 30 to 120 ms and a little", next.tries, took)
	}
}

// TestHoldRetriesClosedConnections: a cached connection the upstream
// closed (gensearchpath after a replica exited) is sent again, once.
func TestHoldRetriesClosedConnections(t *testing.T) {
	next := &flaky{fails: 1, rcode: dns.RcodeServerFailure, err: fmt.Errorf("gensearchpath: cluster DNS: %w", proxy.ErrCachedClosed)}
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	rcode, err := fastHold(next, 2*time.Second).ServeDNS(context.Background(), w, query())
	if rcode != dns.RcodeSuccess || err != nil || w.Msg == nil || next.tries != 2 {
		t.Fatalf("rcode %d, error %v, reply %v after %d tries; want the answer after 2", rcode, err, w.Msg, next.tries)
	}
}

// TestHoldGivesUpAtTheWindow: an upstream refused throughout: SERVFAIL and
// the last error, with a last try at the end of the window.
func TestHoldGivesUpAtTheWindow(t *testing.T) {
	next := &flaky{fails: 1 << 30, rcode: dns.RcodeServerFailure, err: refused}
	h := fastHold(next, 300*time.Millisecond)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	start := time.Now()
	rcode, err := h.ServeDNS(context.Background(), w, query())
	took := time.Since(start)
	if rcode != dns.RcodeServerFailure || !errors.Is(err, syscall.ECONNREFUSED) || w.Msg != nil {
		t.Fatalf("rcode %d, error %v, reply %v", rcode, err, w.Msg)
	}
	// Pauses of 10 to 40 ms, and a last try at 300 ms: 1 + 300/40 tries at
	// the fewest, or fewer when the pauses overran on a busy machine, and
	// 2 + 300/10 at the most.
	if next.tries < 7 || next.tries > 32 || took < 300*time.Millisecond || took > 600*time.Millisecond {
		t.Errorf("%d tries in %s, want 8 to 32 in 300 ms and a little", next.tries, took)
	}
}

// TestHoldClientDeadline: the client's deadline, shorter than the window,
// ends the hold.
func TestHoldClientDeadline(t *testing.T) {
	next := &flaky{fails: 1 << 30, rcode: dns.RcodeServerFailure, err: refused}
	h := fastHold(next, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	rcode, _ := h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), query())
	if took := time.Since(start); rcode != dns.RcodeServerFailure || took > 500*time.Millisecond {
		t.Errorf("rcode %d after %s, want SERVFAIL after 100 ms", rcode, took)
	}
}

// TestHoldTriesOnce: what is not a query left unanswered for a network
// error goes back as it came, after one try.
func TestHoldTriesOnce(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "udp", Err: os.ErrDeadlineExceeded}
	for name, tc := range map[string]struct {
		next  plugin.Handler
		rcode int
		reply bool
	}{
		"SERVFAIL from the upstream":   {writes(dns.RcodeServerFailure), dns.RcodeServerFailure, true},
		"NXDOMAIN from the upstream":   {writes(dns.RcodeNameError), dns.RcodeNameError, true},
		"a timeout":                    {&flaky{fails: 1, rcode: dns.RcodeServerFailure, err: timeout}, dns.RcodeServerFailure, false},
		"another error":                {&flaky{fails: 1, rcode: dns.RcodeServerFailure, err: errors.New("no next plugin found")}, dns.RcodeServerFailure, false},
		"REFUSED, over max_concurrent": {&flaky{fails: 1, rcode: dns.RcodeRefused, err: refused}, dns.RcodeRefused, false},
		"FORMERR":                      {&flaky{fails: 1, rcode: dns.RcodeFormatError, err: refused}, dns.RcodeFormatError, false},
	} {
		counted := &counter{next: tc.next}
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		rcode, _ := fastHold(counted, time.Second).ServeDNS(context.Background(), w, query())
		if rcode != tc.rcode || (w.Msg != nil) != tc.reply || counted.n != 1 {
			t.Errorf("%s: rcode %d, reply %v, %d tries; want %d, a reply %v, one try", name, rcode, w.Msg, counted.n, tc.rcode, tc.reply)
		}
	}
}

// counter counts the tries that reach next.
type counter struct {
	next plugin.Handler
	n    int
}

func (c *counter) Name() string { return "counter" }

func (c *counter) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	c.n++
	return c.next.ServeDNS(ctx, w, r)
}

// TestHoldInFrontOfForward: stock forward to a loopback port nothing
// listens on (refused by ICMP over UDP, by RST over TCP); an upstream that
// starts there 300 ms later answers the held query, and with none the
// query fails after the window.
func TestHoldInFrontOfForward(t *testing.T) {
	for _, proto := range []string{"udp", "tcp"} {
		t.Run(proto, func(t *testing.T) {
			addr := freeAddr(t)
			f := forward.New()
			f.SetProxy(proxy.NewProxy("forward", addr, transport.DNS))
			f.SetProxyOptions(proxy.Options{ForceTCP: proto == "tcp", PreferUDP: proto == "udp"})
			t.Cleanup(func() { f.OnShutdown() })

			// Nothing there: refused, held, and SERVFAIL.
			_, err := f.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query())
			if classify(err) != unsent {
				t.Fatalf("forward to a closed port: %v, not taken for unsent", err)
			}
			t.Logf("forward to a closed port: %v", err)
			h := fastHold(f, 200*time.Millisecond)
			rcode, err := h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query())
			if rcode != dns.RcodeServerFailure || err == nil {
				t.Fatalf("no upstream: rcode %d, %v", rcode, err)
			}

			// An upstream comes while the query is held.
			h.window = 2 * time.Second
			go func() {
				time.Sleep(300 * time.Millisecond)
				serve(t, proto, addr)
			}()
			w := dnstest.NewRecorder(&test.ResponseWriter{})
			start := time.Now()
			rcode, err = h.ServeDNS(context.Background(), w, query())
			if rcode != dns.RcodeSuccess || err != nil || w.Msg == nil || len(w.Msg.Answer) != 1 {
				t.Fatalf("upstream back after 300 ms: rcode %d, %v, reply %v", rcode, err, w.Msg)
			}
			if took := time.Since(start); took < 300*time.Millisecond || took > time.Second {
				t.Errorf("answered after %s, want 300 ms and a little", took)
			}
		})
	}
}

// freeAddr is a loopback address whose port nothing listens on, for UDP
// and TCP.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serve starts a DNS server on addr that answers every A query.
func serve(t *testing.T, proto, addr string) {
	s := &dns.Server{Addr: addr, Net: proto, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		m.Answer = []dns.RR{test.A(r.Question[0].Name + " 5 IN A 10.96.0.1")}
		w.WriteMsg(m)
	})}
	ready := make(chan struct{})
	s.NotifyStartedFunc = func() { close(ready) }
	go func() {
		if err := s.ListenAndServe(); err != nil {
			t.Errorf("serve %s %s: %v", proto, addr, err)
			close(ready)
		}
	}()
	<-ready
	t.Cleanup(func() { s.Shutdown() })
}
