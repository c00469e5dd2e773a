package tracked

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/server"
)

// checker asks one server for the tracked names, round robin, at a rate,
// and judges every answer.
type checker struct {
	s       *server.Server
	names   []*Service
	settled bool // every name must show its final state
	mu      sync.Mutex
	count   observe.Count
}

// Check runs a checker per server until ctx ends and returns the counts;
// with settled, every answer must show the name's final state (nothing is
// being written).
func Check(ctx context.Context, servers []*server.Server, names []*Service, rate int, settled bool) map[string]observe.Count {
	checks := make([]*checker, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		checks[i] = &checker{s: s, names: names, settled: settled}
		wg.Go(func() { checks[i].run(ctx, rate) })
	}
	wg.Wait()
	out := map[string]observe.Count{}
	for _, c := range checks {
		out[c.s.Key] = c.count
	}
	return out
}

// StartCheck runs Check in the background; the returned function stops it
// and returns its counts.
func StartCheck(ctx context.Context, servers []*server.Server, names []*Service, rate int, settled bool) func() map[string]observe.Count {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan map[string]observe.Count, 1)
	go func() { done <- Check(ctx, servers, names, rate, settled) }()
	return func() map[string]observe.Count { cancel(); return <-done }
}

func (ch *checker) run(ctx context.Context, rate int) {
	dnsload.RoundRobin(ctx, ch.s.Addr(), rate, observe.CheckersPerServer, func(q *dnsload.Querier, n int) {
		t := ch.names[n%len(ch.names)]
		sent := time.Now()
		r, _, err := q.Ask(t.QName, t.QType)
		if ctx.Err() != nil { // the answer may be cut short by the end
			return
		}
		ch.judge(t, r, sent, err)
	})
}

func (ch *checker) judge(t *Service, r *dns.Msg, sent time.Time, err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if err != nil {
		ch.count.Errors++
		return
	}
	ch.count.Answers++
	v, why := t.judge(ch.s.Key, r, sent, ch.settled)
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
		ch.count.Examples = append(ch.count.Examples, fmt.Sprintf("%s %s: %s", t.QName, dns.TypeToString[t.QType], why))
	}
}

// Stale asks s once for every name, 16 at a time, and returns the names
// not showing their final state (or a later one).
func Stale(ctx context.Context, s *server.Server, names []*Service) []*Service {
	var mu sync.Mutex
	var out []*Service
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			q := dnsload.NewQuerier(s.Addr())
			defer q.Close()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				t := names[i]
				r, _, err := q.Ask(t.QName, t.QType)
				if err == nil {
					if v, _ := t.judge(s.Key, r, time.Now(), true); v == matches {
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

// Settle asks s for the names until each shows its final state, for up to
// within, and returns the time it took and how many never did.
func Settle(ctx context.Context, s *server.Server, names []*Service, within time.Duration) (time.Duration, int) {
	start := time.Now()
	pending := names
	for len(pending) > 0 && time.Since(start) < within && ctx.Err() == nil {
		if pending = Stale(ctx, s, pending); len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return time.Since(start), len(pending)
}
