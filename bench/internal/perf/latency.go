package perf

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/bench/internal/server"
)

// LatencyTimeout is how long a change may take to show before it counts
// as a timeout.
const LatencyTimeout = 10 * time.Second

// LatencyResult is one plugin's programming latency over the changes.
type LatencyResult struct {
	Changes, Timeouts  int
	P50, P90, P99, Max float64            // milliseconds
	ByKind             map[string]float64 // median per kind of change, ms
}

// PairedLatency compares two plugins change by change: both see the same
// watch event, so the difference cancels the API server's share.
type PairedLatency struct {
	Pair      string
	Changes   int     // seen by both
	MedianMs  float64 // median of first minus second
	FirstWins float64 // share of changes the first showed no later than the second
}

// Change is one API change and the answer that shows it.
type Change struct {
	Kind  string
	QName string
	// Shows tells whether an A answer reflects the change.
	Shows func(*dns.Msg) bool
}

// HasA tells whether m answers the address a.
func HasA(m *dns.Msg, a string) bool {
	want := netip.MustParseAddr(a)
	for _, rr := range m.Answer {
		if r, ok := rr.(*dns.A); ok {
			if got, ok := netip.AddrFromSlice(r.A); ok && got.Unmap() == want {
				return true
			}
		}
	}
	return false
}

// Changer makes change i of a series through the API and says what the
// answer that shows it is.
type Changer interface {
	MakeChange(ctx context.Context, i int) (Change, error)
}

// MeasureLatency makes n changes one after the other and, for each, polls
// both servers until its answer shows the change: the time from just
// before the API request to the first answer that shows it.
func MeasureLatency(ctx context.Context, ch Changer, servers []*server.Server, n int) (map[string]LatencyResult, PairedLatency, error) {
	times := make(map[string][]float64)
	var diffs []float64
	wins := 0
	byKind := make(map[string]map[string][]float64)
	timeouts := make(map[string]int)
	for _, s := range servers {
		byKind[s.Key] = map[string][]float64{}
	}
	for i := range n {
		t0 := time.Now()
		c, err := ch.MakeChange(ctx, i)
		if err != nil {
			return nil, PairedLatency{}, fmt.Errorf("change %d: %w", i, err)
		}
		seen := map[string]float64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, s := range servers {
			wg.Go(func() {
				d, ok := PollUntil(ctx, s, c, t0)
				mu.Lock()
				defer mu.Unlock()
				if !ok {
					timeouts[s.Key]++
					return
				}
				ms := float64(d.Microseconds()) / 1000
				seen[s.Key] = ms
				times[s.Key] = append(times[s.Key], ms)
				byKind[s.Key][c.Kind] = append(byKind[s.Key][c.Kind], ms)
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, PairedLatency{}, err
		}
		a, okA := seen[servers[0].Key]
		b, okB := seen[servers[1].Key]
		if okA && okB {
			diffs = append(diffs, a-b)
			if a <= b {
				wins++
			}
		}
		time.Sleep(20 * time.Millisecond) // let the servers settle between changes
	}
	out := map[string]LatencyResult{}
	for _, s := range servers {
		ts := times[s.Key]
		r := LatencyResult{Changes: n, Timeouts: timeouts[s.Key], ByKind: map[string]float64{},
			P50: Percentile(ts, 50), P90: Percentile(ts, 90), P99: Percentile(ts, 99), Max: slices.Max(append(ts, 0))}
		for k, v := range byKind[s.Key] {
			r.ByKind[k] = Median(v)
		}
		out[s.Key] = r
	}
	paired := PairedLatency{Pair: servers[0].Key + " − " + servers[1].Key, Changes: len(diffs), MedianMs: Median(diffs)}
	if len(diffs) > 0 {
		paired.FirstWins = float64(wins) / float64(len(diffs))
	}
	return out, paired, nil
}

// PollUntil queries s over UDP every millisecond until the answer shows the
// change, and returns the time since t0.
func PollUntil(ctx context.Context, s *server.Server, c Change, t0 time.Time) (time.Duration, bool) {
	client := &dns.Client{Net: "udp", Timeout: time.Second}
	conn, err := client.Dial(s.Addr())
	if err != nil {
		return 0, false
	}
	defer func() { conn.Close() }()
	m := new(dns.Msg)
	m.SetQuestion(c.QName, dns.TypeA)
	m.SetEdns0(4096, false)
	deadline := t0.Add(LatencyTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		m.Id = dns.Id()
		r, _, err := client.ExchangeWithConn(m, conn)
		if err == nil && r.Id == m.Id && c.Shows(r) {
			return time.Since(t0), true
		}
		if err != nil { // a timed-out exchange leaves the socket unusable for matching ids
			conn.Close()
			if conn, err = client.Dial(s.Addr()); err != nil {
				return 0, false
			}
		}
		time.Sleep(time.Millisecond)
	}
	return 0, false
}
