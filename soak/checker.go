package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/test/dnsload"
)

// checkersPerServer are the checker's goroutines per server, each with its
// own UDP socket.
const checkersPerServer = 4

// checkCount is what the checker counted for one server.
type checkCount struct {
	Answers  int      // answers compared with the states written
	Torn     int      // answers that match no state written for the name
	Regress  int      // answers older than one the server had shown before
	Behind   int      // with settled names: answers older than the last write
	ServFail int      // SERVFAIL answers (counted in Torn too)
	Empty    int      `json:",omitempty"` // Mesos: no records where every state allowed has some (counted in Torn too)
	Errors   int      // queries without an answer (timeouts)
	Examples []string // the first wrong answers
}

func (c checkCount) wrong() int { return c.Torn + c.Regress + c.Behind }

// checker asks one server for the tracked names, round robin, at a rate,
// and judges every answer.
type checker struct {
	s       *server
	names   []*tracked
	settled bool // every name must show its final state
	mu      sync.Mutex
	count   checkCount
}

// check runs a checker per server until ctx ends and returns the counts;
// with settled, every answer must show the name's final state (nothing is
// being written).
func check(ctx context.Context, servers []*server, names []*tracked, rate int, settled bool) map[string]checkCount {
	checks := make([]*checker, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		checks[i] = &checker{s: s, names: names, settled: settled}
		wg.Go(func() { checks[i].run(ctx, rate) })
	}
	wg.Wait()
	out := map[string]checkCount{}
	for _, c := range checks {
		out[c.s.key] = c.count
	}
	return out
}

// startCheck runs check in the background; the returned function stops it
// and returns its counts.
func startCheck(ctx context.Context, servers []*server, names []*tracked, rate int, settled bool) func() map[string]checkCount {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan map[string]checkCount, 1)
	go func() { done <- check(ctx, servers, names, rate, settled) }()
	return func() map[string]checkCount { cancel(); return <-done }
}

func (ch *checker) run(ctx context.Context, rate int) {
	dnsload.RoundRobin(ctx, ch.s.addr(), rate, checkersPerServer, func(q *dnsload.Querier, n int) {
		t := ch.names[n%len(ch.names)]
		sent := time.Now()
		r, _, err := q.Ask(t.qname, t.qtype)
		if ctx.Err() != nil { // the answer may be cut short by the end
			return
		}
		ch.judge(t, r, sent, err)
	})
}

func (ch *checker) judge(t *tracked, r *dns.Msg, sent time.Time, err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if err != nil {
		ch.count.Errors++
		return
	}
	ch.count.Answers++
	v, why := t.judge(ch.s.key, r, sent, ch.settled)
	if r.Rcode == dns.RcodeServerFailure {
		ch.count.ServFail++
	}
	switch v {
	case torn:
		ch.count.Torn++
	case regress:
		ch.count.Regress++
	case behind:
		ch.count.Behind++
		why = "an older state than the last write"
	default:
		return
	}
	if len(ch.count.Examples) < 5 {
		ch.count.Examples = append(ch.count.Examples, fmt.Sprintf("%s %s: %s", t.qname, dns.TypeToString[t.qtype], why))
	}
}

// stale asks s once for every name, 16 at a time, and returns the names
// not showing their final state (or a later one).
func stale(ctx context.Context, s *server, names []*tracked) []*tracked {
	var mu sync.Mutex
	var out []*tracked
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			q := dnsload.NewQuerier(s.addr())
			defer q.Close()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				t := names[i]
				r, _, err := q.Ask(t.qname, t.qtype)
				if err == nil {
					if v, _ := t.judge(s.key, r, time.Now(), true); v == matches {
						continue
					}
				}
				mu.Lock()
				out = append(out, t)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// settle asks s for the names until each shows its final state, for up to
// within, and returns the time it took and how many never did.
func settle(ctx context.Context, s *server, names []*tracked, within time.Duration) (time.Duration, int) {
	start := time.Now()
	pending := names
	for len(pending) > 0 && time.Since(start) < within && ctx.Err() == nil {
		if pending = stale(ctx, s, pending); len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return time.Since(start), len(pending)
}
