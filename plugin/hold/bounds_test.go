package hold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/forward"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/proxy"
	"github.com/coredns/coredns/plugin/pkg/transport"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// serverCtx is a context whose queries are counted under server, so that
// each test reads its own metrics.
func serverCtx(server string) context.Context {
	return context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: server})
}

// refusing is an upstream that refuses every try, concurrently.
type refusing struct{ tries atomic.Int64 }

func (f *refusing) Name() string { return "refusing" }

func (f *refusing) ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
	f.tries.Add(1)
	return dns.RcodeServerFailure, refused
}

// concurrently serves n queries through h at once and returns how long
// each took and its rcode.
func concurrently(ctx context.Context, h *Hold, n int) ([]time.Duration, []int) {
	took, rcodes := make([]time.Duration, n), make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			rcodes[i], _ = h.ServeDNS(ctx, dnstest.NewRecorder(&test.ResponseWriter{}), query())
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	return took, rcodes
}

// TestHoldBudget: with a chain that always refuses, 8 queries at once
// against a budget of 5: exactly 5 are held for the window and 3 fail at
// once with SERVFAIL, and the metrics say so. A budget of bytes for 3
// queries holds 3.
func TestHoldBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lim    limits
		held   int
		reason string
	}{
		{"count", limits{count: 5, bytes: 1 << 30}, 5, reasonCount},
		{"bytes", limits{count: 100, bytes: 3*cost(query()) + 10}, 3, reasonBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const queries, window = 8, 500 * time.Millisecond
			server := "dns://budget-" + tc.name + ":53"
			h := fastHold(&refusing{}, window)
			h.held = &budget{limits: tc.lim}
			ctx := serverCtx(server)
			sampled := make(chan float64, 1)
			go func() {
				time.Sleep(window / 2)
				sampled <- testutil.ToFloat64(heldNow.WithLabelValues(server))
			}()
			took, rcodes := concurrently(ctx, h, queries)
			during := <-sampled
			held, fast := 0, 0
			for i, d := range took {
				if rcodes[i] != dns.RcodeServerFailure {
					t.Errorf("rcode %d, want SERVFAIL", rcodes[i])
				}
				switch {
				case d >= window:
					held++
				case d < 100*time.Millisecond:
					fast++
				}
			}
			rejects := testutil.ToFloat64(rejected.WithLabelValues(server, tc.reason))
			if held != tc.held || fast != queries-tc.held || rejects != float64(queries-tc.held) || during != float64(tc.held) {
				t.Errorf("%d held for the window, %d failed within 100 ms, %d between (took %v); rejected{%s} %.0f, held_queries %.0f while held; want %d, %d, 0; %d, %d",
					held, fast, queries-held-fast, took, tc.reason, rejects, during, tc.held, queries-tc.held, queries-tc.held, tc.held)
			}
			if now := testutil.ToFloat64(heldNow.WithLabelValues(server)); now != 0 || h.held.count != 0 || h.held.bytes != 0 {
				t.Errorf("after: held_queries %.0f, budget %d queries %d bytes; want all 0", now, h.held.count, h.held.bytes)
			}
		})
	}
}

// TestHoldResendsLostOnce: a try whose connection broke after the query was
// written (a replica may have read it and died of it) is sent again once;
// when that one is lost too the query fails, without waiting the window.
// Refusals between the two do not reset the count.
func TestHoldResendsLostOnce(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	eof := fmt.Errorf("gensearchpath: cluster DNS: %w", io.EOF)
	for name, tc := range map[string]struct {
		errs   []error // the tries' errors, then an answer
		tries  int
		answer bool
	}{
		"reset twice":                {[]error{reset, reset, reset}, 2, false},
		"closed twice":               {[]error{eof, proxy.ErrCachedClosed, eof}, 2, false},
		"reset, then answered":       {[]error{reset}, 2, true},
		"reset, refused, answered":   {[]error{reset, refused, refused}, 4, true},
		"reset, refused, reset":      {[]error{reset, refused, reset, refused}, 3, false},
		"refused, reset, answered":   {[]error{refused, refused, reset}, 4, true},
		"refused, reset, reset":      {[]error{refused, reset, reset}, 3, false},
		"reset while connecting":     {[]error{dialReset, dialReset, dialReset}, 4, true},
		"unexpected EOF after write": {[]error{io.ErrUnexpectedEOF, io.ErrUnexpectedEOF}, 2, false},
	} {
		server := "dns://lost-" + name + ":53"
		next := &scripted{errs: tc.errs}
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		start := time.Now()
		rcode, _ := fastHold(next, 2*time.Second).ServeDNS(serverCtx(server), w, query())
		took := time.Since(start)
		if next.tries != tc.tries || (w.Msg != nil) != tc.answer || (rcode == dns.RcodeSuccess) != tc.answer || took > time.Second {
			t.Errorf("%s: %d tries, rcode %d, reply %v after %s; want %d tries, an answer %v, within a second", name, next.tries, rcode, w.Msg != nil, took, tc.tries, tc.answer)
		}
		if want := map[bool]float64{true: 0, false: 1}[tc.answer]; testutil.ToFloat64(rejected.WithLabelValues(server, reasonResent)) != want {
			t.Errorf("%s: rejected{resent} %.0f, want %.0f", name, testutil.ToFloat64(rejected.WithLabelValues(server, reasonResent)), want)
		}
	}
}

// dialReset is a reset while connecting: the query was not written.
var dialReset = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNRESET)}

// scripted fails its tries with errs in turn, and then answers.
type scripted struct {
	errs  []error
	tries int
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	s.tries++
	if s.tries <= len(s.errs) {
		return dns.RcodeServerFailure, s.errs[s.tries-1]
	}
	w.WriteMsg(new(dns.Msg).SetReply(r))
	return dns.RcodeSuccess, nil
}

// TestHoldResendsKillerOnceThroughForward: stock forward over TCP to an
// upstream that reads each query and then drops the connection (closed, or
// reset), as a replica that a query crashes: forward tries it twice (its
// max_connect_attempts), and hold sends it again once, so the upstream
// reads it 4 times, and the client gets SERVFAIL long before the window.
func TestHoldResendsKillerOnceThroughForward(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "reset"}[reset], func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			var reads atomic.Int64
			go killer(l, reset, &reads)
			f := forward.New()
			f.SetProxy(proxy.NewProxy("forward", l.Addr().String(), transport.DNS))
			f.SetProxyOptions(proxy.Options{ForceTCP: true})
			t.Cleanup(func() { f.OnShutdown() })
			h := fastHold(f, 2*time.Second)
			start := time.Now()
			rcode, err := h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query())
			took := time.Since(start)
			if rcode != dns.RcodeServerFailure || classify(err) != lost || reads.Load() != 4 || took > time.Second {
				t.Errorf("rcode %d, %v (%v) after %s; the upstream read the query %d times; want SERVFAIL, lost, 4 reads, within a second",
					rcode, err, classify(err), took, reads.Load())
			}
		})
	}
}

// killer reads one query on each connection and drops it: closed, or reset
// (SO_LINGER 0).
func killer(l net.Listener, reset bool, reads *atomic.Int64) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			m, err := (&dns.Conn{Conn: c}).ReadMsg()
			if err != nil || m.Question[0].Name != query().Question[0].Name {
				return // a health check's query is not ours
			}
			reads.Add(1)
			if reset {
				c.(*net.TCPConn).SetLinger(0)
			}
		}()
	}
}

// TestHoldRetryBudget: retries are spent from a bucket that each query
// fills by the ratio: 10 queries against a refusing chain with a ratio of
// 0.5 and an empty bucket make 5 retries in all, and the skipped ones are
// counted; with a burst of 3 saved and no ratio, one query makes 3.
func TestHoldRetryBudget(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ratio          float64
		burst, queries int
		retries        int64
	}{
		// Each query's last try, as its window ends, is lent a token:
		// the queries' own plus one each.
		{"ratio", 0.5, 10, 10, 5 + 10},
		{"burst", 0, 3, 1, 3 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := "dns://retry-budget-" + tc.name + ":53"
			next := &refusing{}
			h := fastHold(next, 300*time.Millisecond)
			h.retries = newRetryBudget(tc.ratio, tc.burst, 0)
			if tc.ratio > 0 {
				h.retries.tokens.Store(0) // what the queries earn only
			}
			concurrently(serverCtx(server), h, tc.queries)
			got := next.tries.Load() - int64(tc.queries)
			counted := testutil.ToFloat64(retries.WithLabelValues(server))
			skipped := testutil.ToFloat64(throttled.WithLabelValues(server))
			if got != tc.retries || counted != float64(tc.retries) || skipped < float64(tc.queries) {
				t.Errorf("%d retries (retries_total %.0f, throttled_total %.0f); want %d, and at least %d throttled", got, counted, skipped, tc.retries, tc.queries)
			}
		})
	}
}

// TestBackoffJitter: every pause lies between first and most, is at most
// three times the one before, and queries that fail together draw
// different pauses from the first on.
func TestBackoffJitter(t *testing.T) {
	const queries, pauses = 200, 12
	first := map[time.Duration]bool{}
	var sum [pauses]time.Duration
	for range queries {
		b := backoff{first: firstPause, most: maxPause}
		prev := firstPause
		for i := range pauses {
			d := b.next()
			if d < firstPause || d > maxPause || d > 3*prev {
				t.Fatalf("pause %d: %s after %s; want %s to %s, at most three times the one before", i, d, prev, firstPause, maxPause)
			}
			if i == 0 {
				first[d] = true
			}
			sum[i] += d
			prev = d
		}
	}
	if len(first) < queries*9/10 {
		t.Errorf("%d different first pauses among %d queries, want nearly all different", len(first), queries)
	}
	// The first pause averages 2*first (uniform from first to 3*first);
	// later ones grow toward most.
	if mean := sum[0] / queries; mean < 40*time.Millisecond || mean > 60*time.Millisecond {
		t.Errorf("first pauses average %s, want about 50 ms", mean)
	}
	if mean := sum[pauses-1] / queries; mean < 150*time.Millisecond {
		t.Errorf("pause %d averages %s, want near %s", pauses, mean, maxPause)
	}
}

// TestHoldPausesDiffer: 20 queries refused together are tried again at
// different times: their first pauses, drawn from 20 to 60 ms, fall both
// in the lower and in the upper third, which a fixed first pause (late
// only by the machine's delays) would not.
func TestHoldPausesDiffer(t *testing.T) {
	next := &stamping{at: map[uint16][]time.Time{}}
	h := fastHold(next, 300*time.Millisecond)
	h.first, h.most = 20*time.Millisecond, 200*time.Millisecond
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := query()
			q.Id = uint16(i)
			h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), q)
		}()
	}
	wg.Wait()
	low, high := 0, 0
	var firsts []time.Duration
	for id, at := range next.at {
		for i := 1; i < len(at)-1; i++ {
			// A pause may overrun on a busy machine; it never comes early.
			// (The last try comes at the window's end, after a shorter one.)
			if p := at[i].Sub(at[i-1]); p < h.first {
				t.Errorf("query %d: pause %d of %s, shorter than %s", id, i, p, h.first)
			}
		}
		p := at[1].Sub(at[0])
		firsts = append(firsts, p)
		switch {
		case p < 33*time.Millisecond:
			low++
		case p >= 47*time.Millisecond:
			high++
		}
	}
	if low < 3 || high < 3 {
		t.Errorf("first pauses %v: %d under 33 ms, %d over 47 ms; want them spread from 20 to 60 ms", firsts, low, high)
	}
}

// stamping refuses every try and notes when each query's tries came.
type stamping struct {
	mu sync.Mutex
	at map[uint16][]time.Time
}

func (s *stamping) Name() string { return "stamping" }

func (s *stamping) ServeDNS(_ context.Context, _ dns.ResponseWriter, r *dns.Msg) (int, error) {
	s.mu.Lock()
	s.at[r.Id] = append(s.at[r.Id], time.Now())
	s.mu.Unlock()
	return dns.RcodeServerFailure, refused
}

// TestClassify: the errors as forward and gensearchpath return them.
func TestClassify(t *testing.T) {
	sys := func(op, network, call string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: network, Err: os.NewSyscallError(call, errno)}
	}
	wrapped := func(err error) error { return fmt.Errorf("gensearchpath: cluster DNS: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want failure
	}{
		{"TCP connect refused", sys("dial", "tcp", "connect", syscall.ECONNREFUSED), unsent},
		{"UDP port unreachable", sys("read", "udp", "read", syscall.ECONNREFUSED), unsent},
		{"UDP refused on write", sys("write", "udp", "write", syscall.ECONNREFUSED), unsent},
		{"no route to host", sys("dial", "tcp", "connect", syscall.EHOSTUNREACH), unsent},
		{"network unreachable", wrapped(sys("write", "udp", "write", syscall.ENETUNREACH)), unsent},
		{"no healthy proxies", forward.ErrNoHealthy, unsent},
		{"gensearchpath without a healthy upstream", wrapped(proxy.ErrNoHealthy), unsent},
		{"reset while connecting", dialReset, unsent},
		{"TCP reset after the write", sys("read", "tcp", "read", syscall.ECONNRESET), lost},
		{"gensearchpath, reset", wrapped(sys("read", "tcp", "read", syscall.ECONNRESET)), lost},
		{"broken pipe", sys("write", "tcp", "write", syscall.EPIPE), lost},
		{"aborted", sys("read", "tcp", "read", syscall.ECONNABORTED), lost},
		{"closed after the write", io.EOF, lost},
		{"closed in the reply", io.ErrUnexpectedEOF, lost},
		{"a kept connection closed", proxy.ErrCachedClosed, lost},
		{"gensearchpath, kept connection closed", wrapped(proxy.ErrCachedClosed), lost},
		{"read timeout", &net.OpError{Op: "read", Net: "udp", Err: os.ErrDeadlineExceeded}, other},
		{"client gone", context.Canceled, other},
		{"deadline", wrapped(context.DeadlineExceeded), other},
		{"another error", errors.New("no next plugin found"), other},
		{"none", nil, other},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%s (%v): %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestHoldRetryFloor: with nothing saved and no queries coming, a held
// query is still tried at the floor's rate: 20 a second for 500 ms.
func TestHoldRetryFloor(t *testing.T) {
	next := &refusing{}
	h := fastHold(next, 500*time.Millisecond)
	// Room for 5 saved, so that a token earned while the query sleeps
	// is not lost to the cap.
	h.retries = newRetryBudget(0, 5, 20)
	h.retries.tokens.Store(0)
	h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query())
	// 10 earned in the window; the last try, at the window's end, may
	// come a little before the tenth.
	if got := next.tries.Load() - 1; got < 8 || got > 11 {
		t.Errorf("%d retries in 500 ms at 20 a second, want about 10", got)
	}
}

// TestHoldLastTryWhenThrottled: with the retry bucket empty and nothing
// coming to earn more, a query held while its upstream refused is still
// tried as its window ends, and gets the answer of an upstream that came
// back meanwhile: the oldest held queries of an outage are the ones the
// bucket would starve. Its debt then holds back the next retry.
func TestHoldLastTryWhenThrottled(t *testing.T) {
	next := &flaky{fails: 1, rcode: dns.RcodeServerFailure, err: refused}
	h := fastHold(next, 200*time.Millisecond)
	h.retries = newRetryBudget(0, 1, 0)
	h.retries.tokens.Store(0)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	start := time.Now()
	rcode, err := h.ServeDNS(serverCtx("dns://last-try:53"), w, query())
	took := time.Since(start)
	if rcode != dns.RcodeSuccess || err != nil || w.Msg == nil || len(w.Msg.Answer) != 1 {
		t.Fatalf("rcode %d, error %v, reply %v after %d tries; want the answer at the last try", rcode, err, w.Msg, next.tries)
	}
	if next.tries != 2 || took < 190*time.Millisecond {
		t.Errorf("%d tries in %s; want 2, the second as the 200 ms window ends", next.tries, took)
	}
	if h.retries.spend(false) {
		t.Errorf("a retry was allowed while the last try's token is owed")
	}
}

// TestHoldLastTryAfterLatePause: on a busy node a pause meant to end
// inside the window ends past it. With no tokens to spend, the try that
// pause leads to is still made, lent its token as the window's last try:
// each of 4 queries is tried once more, then fails with SERVFAIL.
func TestHoldLastTryAfterLatePause(t *testing.T) {
	const server, window = "dns://late-pause:53", 200 * time.Millisecond
	next := &refusing{}
	h := fastHold(next, window)
	h.retries = newRetryBudget(0, 4, 0)
	h.retries.tokens.Store(0)
	h.sleeper = func(ctx context.Context, d time.Duration) bool {
		return sleep(ctx, d+window) // every pause ends past the window
	}
	_, rcodes := concurrently(serverCtx(server), h, 4)
	for i, rc := range rcodes {
		if rc != dns.RcodeServerFailure {
			t.Errorf("query %d: rcode %s, want SERVFAIL", i, dns.RcodeToString[rc])
		}
	}
	if got := next.tries.Load(); got != 4+4 {
		t.Errorf("%d tries, want 8: each query's first and its last, lent", got)
	}
	if got := testutil.ToFloat64(throttled.WithLabelValues(server)); got != 0 {
		t.Errorf("throttled_total %.0f, want 0: no pause passed without its try", got)
	}
}
