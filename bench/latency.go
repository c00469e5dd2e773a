package main

import (
	"github.com/schemadns/schemadns/bench/internal/server"

	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// latencyNamespace holds the objects the programming-latency runs change.
const latencyNamespace = "bench-latency"

// latencyServices are the headless services whose endpoints are added and
// made unready, in turn.
const latencyServices = 10

// latencyTimeout is how long a change may take to show before it counts
// as a timeout.
const latencyTimeout = 10 * time.Second

// latencyResult is one plugin's programming latency over the changes.
type latencyResult struct {
	Changes, Timeouts  int
	P50, P90, P99, Max float64            // milliseconds
	ByKind             map[string]float64 // median per kind of change, ms
}

// pairedLatency compares two plugins change by change: both see the same
// watch event, so the difference cancels the API server's share.
type pairedLatency struct {
	Pair      string
	Changes   int     // seen by both
	MedianMs  float64 // median of first minus second
	FirstWins float64 // share of changes the first showed no later than the second
}

// changer makes the changes: it keeps the latest version of each slice it
// updates, and the addresses it added.
type changer struct {
	f      *fixture
	slices []*discoveryv1.EndpointSlice
	added  []string // per service: the endpoint added last, made unready next
	next   int      // latency addresses used
	n      int      // services created
}

// setupLatency creates the headless services the changes work on.
func (f *fixture) setupLatency(ctx context.Context) (*changer, error) {
	ch := &changer{f: f, slices: make([]*discoveryv1.EndpointSlice, latencyServices), added: make([]string, latencyServices)}
	if err := f.createNamespace(ctx, latencyNamespace); err != nil {
		return nil, err
	}
	for j := range latencyServices {
		name := fmt.Sprintf("lat-hl-%d", j)
		if _, err := f.createService(ctx, latencyNamespace, name, true); err != nil {
			return nil, err
		}
		sl := endpointSlice(latencyNamespace, name+"-0", []string{ch.addr()}, nil)
		sl.Labels = map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy}
		got, err := f.cs.DiscoveryV1().EndpointSlices(latencyNamespace).Create(ctx, sl, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		ch.slices[j] = got
	}
	return ch, nil
}

func (ch *changer) addr() string {
	a := nth(latencyBase, ch.next)
	ch.next++
	return a
}

// sentinels are the latency services, for the sync wait.
func (ch *changer) sentinels() []server.Sentinel {
	var out []server.Sentinel
	for j := range latencyServices {
		out = append(out, server.Sentinel{Name: fmt.Sprintf("lat-hl-%d.%s.svc.cluster.local.", j, latencyNamespace), Qtype: dns.TypeA, Min: 1})
	}
	return out
}

// change is one API change and the answer that shows it.
type change struct {
	kind  string
	qname string
	// shows tells whether an A answer reflects the change.
	shows func(*dns.Msg) bool
}

// makeChange performs change i through the API: a new service, an
// endpoint added, or the endpoint added last made unready, in turn.
func (ch *changer) makeChange(ctx context.Context, i int) (change, error) {
	j := (i / 3) % latencyServices
	svc := fmt.Sprintf("lat-hl-%d.%s.svc.cluster.local.", j, latencyNamespace)
	switch i % 3 {
	case 0:
		ch.n++
		name := fmt.Sprintf("lat-%d", ch.n)
		ip, err := ch.f.createService(ctx, latencyNamespace, name, false)
		if err != nil {
			return change{}, err
		}
		return change{"new service", name + "." + latencyNamespace + ".svc.cluster.local.", func(m *dns.Msg) bool { return hasA(m, ip) }}, nil
	case 1:
		a := ch.addr()
		ready := true
		if err := ch.updateSlice(ctx, j, func(sl *discoveryv1.EndpointSlice) {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}); err != nil {
			return change{}, err
		}
		ch.added[j] = a
		return change{"endpoint added", svc, func(m *dns.Msg) bool { return hasA(m, a) }}, nil
	}
	a := ch.added[j]
	unready := false
	if err := ch.updateSlice(ctx, j, func(sl *discoveryv1.EndpointSlice) {
		for k := range sl.Endpoints {
			if sl.Endpoints[k].Addresses[0] == a {
				sl.Endpoints[k].Conditions.Ready = &unready
			}
		}
	}); err != nil {
		return change{}, err
	}
	return change{"endpoint made unready", svc, func(m *dns.Msg) bool { return m.Rcode == dns.RcodeSuccess && !hasA(m, a) }}, nil
}

func (ch *changer) updateSlice(ctx context.Context, j int, edit func(*discoveryv1.EndpointSlice)) error {
	sl := ch.slices[j].DeepCopy()
	edit(sl)
	got, err := ch.f.cs.DiscoveryV1().EndpointSlices(latencyNamespace).Update(ctx, sl, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	ch.slices[j] = got
	return nil
}

// hasA tells whether m answers the address a.
func hasA(m *dns.Msg, a string) bool {
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

// measureLatency makes n changes one after the other and, for each, polls
// both servers until its answer shows the change: the time from just
// before the API request to the first answer that shows it.
func measureLatency(ctx context.Context, ch *changer, servers []*server.Server, n int) (map[string]latencyResult, pairedLatency, error) {
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
		c, err := ch.makeChange(ctx, i)
		if err != nil {
			return nil, pairedLatency{}, fmt.Errorf("change %d: %w", i, err)
		}
		seen := map[string]float64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, s := range servers {
			wg.Go(func() {
				d, ok := pollUntil(ctx, s, c, t0)
				mu.Lock()
				defer mu.Unlock()
				if !ok {
					timeouts[s.Key]++
					return
				}
				ms := float64(d.Microseconds()) / 1000
				seen[s.Key] = ms
				times[s.Key] = append(times[s.Key], ms)
				byKind[s.Key][c.kind] = append(byKind[s.Key][c.kind], ms)
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, pairedLatency{}, err
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
	out := map[string]latencyResult{}
	for _, s := range servers {
		ts := times[s.Key]
		r := latencyResult{Changes: n, Timeouts: timeouts[s.Key], ByKind: map[string]float64{},
			P50: percentile(ts, 50), P90: percentile(ts, 90), P99: percentile(ts, 99), Max: slices.Max(append(ts, 0))}
		for k, v := range byKind[s.Key] {
			r.ByKind[k] = median(v)
		}
		out[s.Key] = r
	}
	paired := pairedLatency{Pair: servers[0].Key + " − " + servers[1].Key, Changes: len(diffs), MedianMs: median(diffs)}
	if len(diffs) > 0 {
		paired.FirstWins = float64(wins) / float64(len(diffs))
	}
	return out, paired, nil
}

// pollUntil queries s over UDP every millisecond until the answer shows the
// change, and returns the time since t0.
func pollUntil(ctx context.Context, s *server.Server, c change, t0 time.Time) (time.Duration, bool) {
	client := &dns.Client{Net: "udp", Timeout: time.Second}
	conn, err := client.Dial(s.Addr())
	if err != nil {
		return 0, false
	}
	defer func() { conn.Close() }()
	m := new(dns.Msg)
	m.SetQuestion(c.qname, dns.TypeA)
	m.SetEdns0(4096, false)
	deadline := t0.Add(latencyTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		m.Id = dns.Id()
		r, _, err := client.ExchangeWithConn(m, conn)
		if err == nil && r.Id == m.Id && c.shows(r) {
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
