// Package churn rewrites EndpointSlices under running servers at a fixed
// rate while it checks their answers, and measures their memory and CPU
// over it.
package churn

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/procstat"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// The churn: many client-go writers rewrite the EndpointSlices of the
// shape's services at a fixed rate while a checker asks the servers for the
// rewritten headless names over UDP and compares every answer with the
// states written for that name. Meanwhile the servers' RSS is watched; the
// figure is its peak.

// Config is the churn's part of the command line.
type Config struct {
	Rate      int           // updates/s offered
	Duration  time.Duration // of the writing
	Writers   int           // concurrent writers
	CheckRate int           // queries/s to each server
}

// churnBase is where the addresses the churn writes begin, a /10 of their
// own in the fixture's address plan (bench/internal/fixture).
var churnBase = netip.MustParseAddr("10.128.0.0")

// checkersPerServer are the checker's goroutines per server, each with its
// own UDP socket.
const checkersPerServer = 4

// SettleTimeout bounds the wait, after the writing, for every checked name
// to show its last state.
const SettleTimeout = 30 * time.Second

// Result is what one churn measured.
type Result struct {
	Offered  int     // updates/s asked for
	Seconds  float64 // length of the writing
	Writers  int
	Services int // services whose slices were rewritten
	Names    int // of them, the headless ones, whose answers are checked
	Updates  int // updates the API server accepted
	Failed   int // updates it refused or that timed out
	Rate     float64
	Check    map[string]Check // by target
	// Memory by target: PeakRSS is the peak during the churn and the
	// settling after it; After is read once every name showed its last
	// state, after a forced GC.
	PeakRSS map[string]int64
	After   map[string]server.Memory
	PeakBy  string // how the peak was read
	// CPU is each server's CPU time (utime+stime) from the start of the
	// churn to the end of the settling, seconds: mostly the cost of
	// taking in the updates.
	CPU map[string]float64
	// Net and Quiet are the measuring windows after the checked churn,
	// with no checker running: Net writes the same address changes, Quiet
	// changes only an annotation of each slice (nothing DNS reads).
	Net, Quiet *Window
}

// Window is one measuring window: updates written with no queries
// but the settling's, and each server's CPU over it.
type Window struct {
	Seconds float64
	Updates int
	Failed  int
	// CPU by target, seconds, from the first write to a second after the
	// last: the settling's queries are not in it.
	CPU map[string]float64
	// Stale are the checked names a server did not show at their last
	// state within settleTimeout after the window (Net only).
	Stale map[string]int
	// Skipped are the updates a server counted in
	// coredns_watchcache_updates_skipped_total{resource="endpointslices"}
	// over the window, by target; absent for stock, which has no such
	// counter.
	Skipped map[string]int
}

// Check is the checker's count for one server.
type Check struct {
	Answers   int // answers compared with the states written
	Wrong     int // answers that match no state written for the name
	Truncated int // UDP answers with TC set, asked again over TCP
	Errors    int // queries without an answer (timeout, refused)
	// StaleAtEnd are the names that did not show their last state within
	// settleTimeout after the writing stopped.
	StaleAtEnd int
	Examples   []string // the first wrong answers
}

// Service is one service whose slices the churn rewrites. Its addresses
// and sequence are the one writer's that owns it; its states are shared
// with the checker.
type Service struct {
	ns, name string
	// slices are the service's IPv4 EndpointSlices as loaded: templates,
	// copied with the addresses of addrs for each write. An update writes
	// the one slice that holds the endpoint it changes.
	slices []*discoveryv1.EndpointSlice
	addrs  []uint32 // every endpoint's address, slice after slice, as last written
	seq    int      // updates written

	mu       sync.Mutex
	states   map[uint64]int // hash of an address set → its sequence; nil when not checked
	lastOK   int            // sequence of the last update the API server accepted
	finalSeq int            // after the writing: the state every answer must reach
}

// NewService is a service with the given IPv4 slices as loaded; its
// answers are checked when checked (a headless service).
func NewService(ns, name string, slices []*discoveryv1.EndpointSlice, checked bool) *Service {
	s := &Service{ns: ns, name: name, slices: slices}
	for _, sl := range slices {
		for _, ep := range sl.Endpoints {
			s.addrs = append(s.addrs, dnsload.AddrNum(netip.MustParseAddr(ep.Addresses[0])))
		}
	}
	if checked {
		s.states = map[uint64]int{dnsload.SetHash(s.addrs): 0}
	}
	return s
}

// written is slice k of s as it is written now: the template with the
// current addresses.
func (s *Service) written(k int) *discoveryv1.EndpointSlice {
	from := 0
	for _, sl := range s.slices[:k] {
		from += len(sl.Endpoints)
	}
	sl := s.slices[k].DeepCopy()
	for j := range sl.Endpoints {
		sl.Endpoints[j].Addresses = []string{dnsload.NumAddr(s.addrs[from+j])}
	}
	return sl
}

// sliceOf is the slice that holds endpoint j.
func (s *Service) sliceOf(j int) int {
	for k, sl := range s.slices {
		if j < len(sl.Endpoints) {
			return k
		}
		j -= len(sl.Endpoints)
	}
	return len(s.slices) - 1
}

// Churn is one churn run, or several in turn on the same services (the
// threshold shape's runs, which go on from the state the last one left).
type Churn struct {
	cfg      Config
	cs       kubernetes.Interface
	services []*Service
	checked  []*Service // the headless ones
	next     atomic.Uint32
	updates  atomic.Int64
	failed   atomic.Int64
}

// New churns services through cs.
func New(cfg Config, cs kubernetes.Interface, services []*Service) *Churn {
	c := &Churn{cfg: cfg, cs: cs, services: services}
	for _, s := range services {
		if s.states != nil {
			c.checked = append(c.checked, s)
		}
	}
	return c
}

// Services is how many services the churn rewrites.
func (c *Churn) Services() int { return len(c.services) }

// Checked is how many of its services, the headless ones, have their
// answers checked.
func (c *Churn) Checked() int { return len(c.checked) }

// Run writes for the configured time while checking each server, then
// waits until every checked name shows its last state on every server, and
// reads the servers' peak RSS and their memory after the churn.
func (c *Churn) Run(ctx context.Context, servers []*server.Server) (*Result, error) {
	res := &Result{Offered: c.cfg.Rate, Writers: c.cfg.Writers, Services: len(c.services), Names: len(c.checked),
		Check: map[string]Check{}, PeakRSS: map[string]int64{}, After: map[string]server.Memory{},
		PeakBy: "VmHWM, reset through /proc/PID/clear_refs when the churn starts"}
	hwm := true
	watches := make([]*server.PeakWatch, len(servers))
	cpu0 := make([]float64, len(servers))
	for i, s := range servers {
		cpu0[i], _ = procstat.CPUSeconds(s.PID())
		if err := procstat.ResetPeak(s.PID()); err != nil {
			hwm = false
			res.PeakBy = fmt.Sprintf("the largest VmRSS sampled every 50 ms (VmHWM could not be reset: %v)", err)
		}
		watches[i] = server.WatchRSS(s.PID())
	}
	defer func() {
		for _, w := range watches {
			w.End()
		}
	}()
	checks := make([]*checker, len(servers))
	checkCtx, stopChecks := context.WithCancel(ctx)
	var checkWG sync.WaitGroup
	for i, s := range servers {
		checks[i] = &checker{c: c, s: s}
		checkWG.Go(func() { checks[i].run(checkCtx, c.cfg.CheckRate) })
	}
	updates0, failed0 := c.updates.Load(), c.failed.Load()
	start := time.Now()
	c.write(ctx, start.Add(c.cfg.Duration), c.update)
	res.Seconds = time.Since(start).Seconds()
	stopChecks()
	checkWG.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Updates, res.Failed = int(c.updates.Load()-updates0), int(c.failed.Load()-failed0)
	res.Rate = float64(res.Updates) / res.Seconds
	for _, s := range c.checked {
		s.mu.Lock()
		s.finalSeq = s.lastOK
		s.mu.Unlock()
	}
	for _, ch := range checks {
		ch.res.StaleAtEnd = c.settle(ctx, ch.s)
		res.Check[ch.s.Key] = ch.res
	}
	res.CPU = map[string]float64{}
	for i, s := range servers {
		if cpu, err := procstat.CPUSeconds(s.PID()); err == nil {
			res.CPU[s.Key] = cpu - cpu0[i]
		}
		peak := watches[i].End()
		if _, top, err := procstat.RSS(s.PID()); err == nil && hwm {
			peak = max(peak, top)
		}
		res.PeakRSS[s.Key] = peak
		m, err := s.ReadMemory()
		if err != nil {
			return res, err
		}
		res.After[s.Key] = m
	}
	var err error
	if res.Net, err = c.window(ctx, servers, c.update, true); err != nil {
		return res, err
	}
	res.Quiet, err = c.window(ctx, servers, c.touch, false)
	return res, err
}

// window writes with update for a tenth of the churn's time (at least two
// seconds) with no checker running, and measures each server's CPU over it
// and the updates it skipped, up to a second after the last write. With
// settle (address changes) it then asks every checked name until it shows
// its last state on each server: a server that had not taken in every
// update within that second shows as stale names.
func (c *Churn) window(ctx context.Context, servers []*server.Server, update func(context.Context, *Service), settle bool) (*Window, error) {
	w := &Window{CPU: map[string]float64{}, Skipped: map[string]int{}, Stale: map[string]int{}}
	cpu0 := make([]float64, len(servers))
	skipped0 := make([]int, len(servers))
	for i, s := range servers {
		cpu0[i], _ = procstat.CPUSeconds(s.PID())
		skipped0[i] = s.SkippedSlices()
	}
	updates0, failed0 := c.updates.Load(), c.failed.Load()
	start := time.Now()
	c.write(ctx, start.Add(max(c.cfg.Duration/10, 2*time.Second)), update)
	w.Seconds = time.Since(start).Seconds()
	w.Updates, w.Failed = int(c.updates.Load()-updates0), int(c.failed.Load()-failed0)
	for _, s := range c.checked {
		s.mu.Lock()
		s.finalSeq = s.lastOK
		s.mu.Unlock()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// A second after the last write the servers have taken in what was
	// written (they keep up with the writers: the checked churn shows no
	// name stale at its end); the CPU read then is the updates' alone.
	// The settling after it asks every name, so it only checks.
	time.Sleep(time.Second)
	for i, s := range servers {
		if cpu, err := procstat.CPUSeconds(s.PID()); err == nil {
			w.CPU[s.Key] = cpu - cpu0[i]
		}
		if n := s.SkippedSlices(); n >= 0 && skipped0[i] >= 0 {
			w.Skipped[s.Key] = n - skipped0[i]
		}
	}
	if settle {
		for _, s := range servers {
			w.Stale[s.Key] = c.settle(ctx, s)
		}
	}
	return w, ctx.Err()
}

// touch changes only an annotation of one of s's slices: an update DNS
// does not read, which a server should take in at almost no cost.
func (c *Churn) touch(ctx context.Context, s *Service) {
	n := c.next.Add(1)
	sl := s.written(int(n) % len(s.slices))
	sl.Annotations = map[string]string{"bench.schemadns.test/touched": fmt.Sprint(n)}
	if _, err := c.cs.DiscoveryV1().EndpointSlices(s.ns).Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		c.failed.Add(1)
		return
	}
	c.updates.Add(1)
}

// write runs the writers until end: a pacer hands out tokens at the offered
// rate, each writer takes one when idle and rewrites one of its own
// services (so a service's updates are written one after the other); a
// token no writer is idle for is dropped, so the rate achieved is what the
// API server sustained.
func (c *Churn) write(ctx context.Context, end time.Time, update func(context.Context, *Service)) {
	// Updates in flight at the end run to completion under ctx.
	writing, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	tokens := make(chan struct{}, c.cfg.Writers)
	go dnsload.Pace(writing, tokens, c.cfg.Rate)
	var wg sync.WaitGroup
	for w := range c.cfg.Writers {
		var mine []*Service
		for i := w; i < len(c.services); i += c.cfg.Writers {
			mine = append(mine, c.services[i])
		}
		if len(mine) == 0 {
			continue
		}
		r := rand.New(rand.NewPCG(uint64(w), 5))
		wg.Go(func() {
			for {
				select {
				case <-writing.Done():
					return
				case <-tokens:
				}
				update(ctx, mine[r.IntN(len(mine))])
			}
		})
	}
	wg.Wait()
}

// update replaces one endpoint address of s by a new one, registers the
// new set before the API request (so no server can answer it before the
// checker knows it), and writes the slice that holds it whole (an
// unconditional update: only this writer writes it).
func (c *Churn) update(ctx context.Context, s *Service) {
	j := s.seq % len(s.addrs)
	s.addrs[j] = dnsload.AddrNum(churnBase) + c.next.Add(1)
	s.seq++
	seq := s.seq
	if s.states != nil {
		s.mu.Lock()
		s.states[dnsload.SetHash(s.addrs)] = seq
		s.mu.Unlock()
	}
	sl := s.written(s.sliceOf(j))
	_, err := c.cs.DiscoveryV1().EndpointSlices(s.ns).Update(ctx, sl, metav1.UpdateOptions{})
	if err != nil {
		c.failed.Add(1)
		return
	}
	c.updates.Add(1)
	s.mu.Lock()
	s.lastOK = seq
	s.mu.Unlock()
}

// verdict is how an answer compares with the states of its name.
type verdict int

const (
	matches verdict = iota // a state written for the name
	wrong                  // no state written for the name
	behind                 // a state, older than the one required
)

// judge compares a reply to the states written for s. Before the
// settling, any state written is right; in it, only the last one accepted
// by the API server or a later one.
func (s *Service) judge(r *dns.Msg, settling bool) (verdict, string) {
	if r.Rcode != dns.RcodeSuccess {
		return wrong, dns.RcodeToString[r.Rcode]
	}
	var got []uint32
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok && a.A.To4() != nil {
			got = append(got, binary.BigEndian.Uint32(a.A.To4()))
		}
	}
	s.mu.Lock()
	seq, ok := s.states[dnsload.SetHash(got)]
	final := s.finalSeq
	s.mu.Unlock()
	switch {
	case !ok:
		return wrong, fmt.Sprintf("%d addresses, a set never written", len(got))
	case settling && seq < final:
		return behind, ""
	}
	return matches, ""
}

// checker asks one server for the checked names, round robin, and counts.
type checker struct {
	c   *Churn
	s   *server.Server
	mu  sync.Mutex
	res Check
}

// run asks until ctx ends, at rate queries/s over checkersPerServer sockets.
func (ch *checker) run(ctx context.Context, rate int) {
	if len(ch.c.checked) == 0 {
		return
	}
	dnsload.RoundRobin(ctx, ch.s.Addr(), rate, checkersPerServer, func(q *dnsload.Querier, n int) {
		s := ch.c.checked[n%len(ch.c.checked)]
		r, tc, err := q.Ask(s.name+"."+s.ns+".svc.cluster.local.", dns.TypeA)
		if ctx.Err() != nil { // the answer may be cut short by the end
			return
		}
		ch.count(s, r, tc, err)
	})
}

func (ch *checker) count(s *Service, r *dns.Msg, tc bool, err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if tc {
		ch.res.Truncated++
	}
	if err != nil {
		ch.res.Errors++
		return
	}
	ch.res.Answers++
	if v, why := s.judge(r, false); v == wrong {
		ch.res.Wrong++
		if len(ch.res.Examples) < 5 {
			ch.res.Examples = append(ch.res.Examples, fmt.Sprintf("%s.%s A: %s", s.name, s.ns, why))
		}
	}
}

// settle asks s for every checked name until it shows the last state
// accepted by the API server (or a later one), for up to settleTimeout,
// and returns how many never did.
func (c *Churn) settle(ctx context.Context, s *server.Server) int {
	pending := c.checked
	deadline := time.Now().Add(SettleTimeout)
	q := dnsload.NewQuerier(s.Addr())
	defer q.Close()
	for len(pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		var still []*Service
		for _, n := range pending {
			r, _, err := q.Ask(n.name+"."+n.ns+".svc.cluster.local.", dns.TypeA)
			if err != nil {
				still = append(still, n)
				continue
			}
			if v, _ := n.judge(r, true); v != matches {
				still = append(still, n)
			}
		}
		if pending = still; len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return len(pending)
}

// PerUpdate is a server's CPU over a window per update written, µs.
func (w *Window) PerUpdate(key string) string {
	if w.Updates == 0 || w.CPU[key] <= 0 {
		return toolreport.Dash
	}
	return fmt.Sprintf("%.0f", w.CPU[key]/float64(w.Updates)*1e6)
}

// SkippedText is how many of a window's updates ours skipped.
func (w *Window) SkippedText() string {
	n, ok := w.Skipped[server.KeyOurs]
	if !ok {
		return toolreport.Dash
	}
	return fmt.Sprintf("%d of %d", n, w.Updates)
}

// PerUpdate is a server's CPU time over the churn per update written, µs.
func (c *Result) PerUpdate(key string) string {
	if c.Updates == 0 || c.CPU[key] == 0 {
		return toolreport.Dash
	}
	return fmt.Sprintf("%.0f", c.CPU[key]/float64(c.Updates)*1e6)
}
