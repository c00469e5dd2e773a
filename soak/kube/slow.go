package kube

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/server"
)

// The slow clients: cfg.SlowConns TCP connections are held against a
// server, half idle (connected, nothing sent) and half slow (a query's
// length prefix, then a byte a second); a connection the server closes is
// opened again at once. Meanwhile a UDP client asks at a steady rate, and
// its latency is compared with the same client's before the connections.

// slowPhase is the length of each measurement (before, while held).
const slowPhase = 10 * time.Second

// slowQPS is the UDP client's rate.
const slowQPS = 200

// SlowResult is one server's outcome.
type SlowResult struct {
	Conns            int
	HeldMin, HeldMax int64   // connections open at once, sampled every 100 ms while measuring
	HeldMean         float64 // their mean: the server closes idle ones after its read timeout, all at once
	samples, heldSum int64
	Reopened         int64 // connections the server closed and the holder opened again
	DialErrors       int64
	Before, During   udpLatency
}

// udpLatency is the UDP client's figures over one phase.
type udpLatency struct {
	observe.Quantiles
	Lost int // queries without an answer within a second
}

func runSlow(ctx context.Context, e *env) (map[string]*SlowResult, error) {
	out := map[string]*SlowResult{}
	var errs []error
	for _, s := range e.servers {
		r := e.slow(ctx, s)
		out[s.Key] = r
		logf("slow clients on %s: %d–%d held (mean %.0f); UDP p99 %.2f ms before, %.2f ms during, %d lost", s, r.HeldMin, r.HeldMax, r.HeldMean, r.Before.P99, r.During.P99, r.During.Lost)
		if r.During.Lost > 0 {
			errs = append(errs, fmt.Errorf("%s: %d UDP queries unanswered while the connections were held", s, r.During.Lost))
		}
		if err := e.alive(s); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%v", errs)
	}
	return out, ctx.Err()
}

func (e *env) slow(ctx context.Context, s *server.Server) *SlowResult {
	res := &SlowResult{Conns: e.cfg.SlowConns, HeldMin: -1}
	t := e.fix.Services[e.cfg.Headless]
	name := t.Name + "." + t.NS + ".svc.cluster.local."
	res.Before = udpLatencies(ctx, s.Addr(), name, slowPhase)
	hctx, stop := context.WithCancel(ctx)
	var open atomic.Int64
	var wg sync.WaitGroup
	for i := range e.cfg.SlowConns {
		wg.Go(func() { hold(hctx, s.Addr(), i%2 == 1, &open, res) })
	}
	// Let the connections open before measuring.
	for end := time.Now().Add(10 * time.Second); open.Load() < int64(e.cfg.SlowConns) && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	sctx, stopSampling := context.WithCancel(ctx)
	var swg sync.WaitGroup
	swg.Go(func() { sampleOpen(sctx, &open, res) })
	res.During = udpLatencies(ctx, s.Addr(), name, slowPhase)
	stopSampling()
	swg.Wait()
	stop()
	wg.Wait()
	return res
}

// sampleOpen records the fewest and most connections open, every 100 ms.
func sampleOpen(ctx context.Context, open *atomic.Int64, res *SlowResult) {
	for ctx.Err() == nil {
		n := open.Load()
		if res.HeldMin < 0 || n < res.HeldMin {
			res.HeldMin = n
		}
		res.HeldMax = max(res.HeldMax, n)
		res.samples++
		res.heldSum += n
		res.HeldMean = float64(res.heldSum) / float64(res.samples)
		time.Sleep(100 * time.Millisecond)
	}
}

// hold keeps one connection open until ctx ends, opening it again when
// the server closes it; a slow one sends a length prefix and then one byte
// of a query a second.
func hold(ctx context.Context, addr string, slow bool, open *atomic.Int64, res *SlowResult) {
	msg := packed(server.Question("slow.soak.svc.cluster.local.", dns.TypeA))
	b := binary.BigEndian.AppendUint16(nil, uint16(len(msg)))
	b = append(b, msg...)
	for first := true; ctx.Err() == nil; first = false {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			atomic.AddInt64(&res.DialErrors, 1)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !first {
			atomic.AddInt64(&res.Reopened, 1)
		}
		open.Add(1)
		holdOne(ctx, c, slow, b)
		open.Add(-1)
		c.Close()
	}
}

// holdOne waits until the server closes c or ctx ends, writing b a byte a
// second when slow.
func holdOne(ctx context.Context, c net.Conn, slow bool, b []byte) {
	closed := make(chan struct{})
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				close(closed)
				return
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			c.Close()
			<-closed
			return
		case <-closed:
			return
		case <-tick.C:
			if slow && i < len(b) {
				c.Write(b[i : i+1])
			}
		}
	}
}

// udpLatencies asks name over UDP at slowQPS for d and summarises the
// round trips.
func udpLatencies(ctx context.Context, addr, name string, d time.Duration) udpLatency {
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	var out udpLatency
	var rtts []time.Duration
	tick := time.NewTicker(time.Second / slowQPS)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; <-tick.C {
		m := server.Question(name, dns.TypeA)
		start := time.Now()
		if _, _, err := c.Exchange(m, addr); err != nil {
			out.Lost++
			continue
		}
		rtts = append(rtts, time.Since(start))
	}
	out.Quantiles = observe.Summarise(rtts)
	return out
}
