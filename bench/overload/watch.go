package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/procstat"
)

// watch samples a server while it is loaded: its RSS and goroutines, and
// how long its /health and /ready take to answer, as kubelet's probes
// would ask them.
type watch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu             sync.Mutex
	rssPeak        int64
	goroutinesPeak int
	scrapeFailures int
	health, ready  []time.Duration // one per probe; a probe that failed counts as probeTimeout
	healthFailed   int
	readyFailed    int
}

// probeTimeout is how long a /health or /ready probe waits (kubelet's
// default timeoutSeconds is 1; waiting longer tells by how much it missed).
const probeTimeout = 5 * time.Second

func startWatch(s *server) *watch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watch{cancel: cancel}
	w.wg.Go(func() { w.every(ctx, 50*time.Millisecond, func() { w.sampleRSS(s.pid()) }) })
	w.wg.Go(func() { w.every(ctx, 250*time.Millisecond, func() { w.sampleGoroutines(ctx, s) }) })
	w.wg.Go(func() {
		w.every(ctx, 200*time.Millisecond, func() { w.probe(ctx, s.healthURL(), &w.health, &w.healthFailed) })
	})
	w.wg.Go(func() {
		w.every(ctx, 200*time.Millisecond, func() { w.probe(ctx, s.readyURL(), &w.ready, &w.readyFailed) })
	})
	return w
}

func (w *watch) stop() {
	w.cancel()
	w.wg.Wait()
}

func (w *watch) every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *watch) sampleRSS(pid int) {
	cur, _, err := procstat.RSS(pid)
	if err != nil {
		return
	}
	w.mu.Lock()
	w.rssPeak = max(w.rssPeak, cur)
	w.mu.Unlock()
}

func (w *watch) sampleGoroutines(ctx context.Context, s *server) {
	n, err := goroutines(ctx, s)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.scrapeFailures++
		return
	}
	w.goroutinesPeak = max(w.goroutinesPeak, n)
}

// goroutines reads go_goroutines from the server's metrics.
func goroutines(ctx context.Context, s *server) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.metricsURL(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no go_goroutines in %s", s.metricsURL())
}

func (w *watch) probe(ctx context.Context, url string, into *[]time.Duration, failed *int) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(start)
	if err == nil {
		resp.Body.Close()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil && err != nil && took < probeTimeout {
		return // the watch ended mid-probe
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		*failed++
		took = max(took, probeTimeout)
	}
	*into = append(*into, took)
}

// watched is what a watch saw.
type watched struct {
	RSSPeak        int64
	GoroutinesPeak int
	ScrapeFailures int
	// Health and Ready are the slowest probe and the probes over 1 s.
	HealthMax, ReadyMax       float64 // seconds
	HealthOver1s, ReadyOver1s int
	HealthFailed, ReadyFailed int
	HealthProbes, ReadyProbes int
}

func (w *watch) result() watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	over := func(ds []time.Duration) int {
		n := 0
		for _, d := range ds {
			if d > time.Second {
				n++
			}
		}
		return n
	}
	maxOf := func(ds []time.Duration) float64 {
		if len(ds) == 0 {
			return 0
		}
		return slices.Max(ds).Seconds()
	}
	return watched{RSSPeak: w.rssPeak, GoroutinesPeak: w.goroutinesPeak, ScrapeFailures: w.scrapeFailures,
		HealthMax: maxOf(w.health), ReadyMax: maxOf(w.ready), HealthOver1s: over(w.health), ReadyOver1s: over(w.ready),
		HealthFailed: w.healthFailed, ReadyFailed: w.readyFailed, HealthProbes: len(w.health), ReadyProbes: len(w.ready)}
}

// Recovery: after the load ends, a client of its own asks a cluster name
// every 10 ms; the server has recovered when recoveredAfter answers in a
// row each came within recoveredWithin.
const (
	recoveredWithin = 20 * time.Millisecond
	recoveredAfter  = 3
	recoveryLimit   = 10 * time.Second
)

// recovery is the time from end to the first of the answers that show the
// server recovered; recoveryLimit when it did not within that.
func recovery(ctx context.Context, addr, name string, end time.Time) time.Duration {
	conn, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 2, 1)}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		return recoveryLimit
	}
	defer conn.Close()
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	streak := 0
	var first time.Time
	buf := make([]byte, 4096)
	for id := uint16(1); time.Since(end) < recoveryLimit && ctx.Err() == nil; id++ {
		q.Id = id
		wire, _ := q.Pack()
		sent := time.Now()
		if _, err := conn.Write(wire); err != nil {
			return recoveryLimit
		}
		ok := waitAnswer(conn, buf, id, sent.Add(recoveredWithin))
		switch {
		case ok && streak == 0:
			first, streak = sent, 1
		case ok:
			streak++
		default:
			streak = 0
		}
		if streak == recoveredAfter {
			return max(first.Sub(end), 0)
		}
		time.Sleep(time.Until(sent.Add(10 * time.Millisecond)))
	}
	return recoveryLimit
}

// waitAnswer reads until the answer to id comes or the deadline passes.
func waitAnswer(conn *net.UDPConn, buf []byte, id uint16, deadline time.Time) bool {
	_ = conn.SetReadDeadline(deadline)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return false
		}
		if n >= 12 && uint16(buf[0])<<8|uint16(buf[1]) == id && buf[3]&0xf == 0 {
			return true
		}
	}
}
