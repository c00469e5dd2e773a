package main

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/test/dnsload"
)

// The churn: client-go writers rewrite EndpointSlices and Services as fast
// as the API server takes them while a checker asks both servers for every
// rewritten name and judges each answer (tracked.judge); probers time the
// programming latency on services of their own; the servers' peak RSS is
// their VmHWM from the start of the writing.

// probeServices are the services the latency probers write, one each;
// the writers leave them alone.
const probeServices = 8

// latencyTimeout bounds one latency probe: a change not shown by then
// counts at this value.
const latencyTimeout = 10 * time.Second

// churnResult is what the churn measured.
type churnResult struct {
	Seconds                               float64
	Writers, Conns                        int
	SliceUpdates, ServiceUpdates, Deletes int64 // deletions and re-creations of slices count as slice updates too
	Failed                                int64
	Rate                                  float64 // accepted writes per second
	Check                                 map[string]checkCount
	StaleAfter1s                          map[string]int     // names not at their last write 1 s after the writers stopped
	SettleSeconds                         map[string]float64 // until every name showed its last write
	NeverSettled                          map[string]int
	Latency                               map[string]quantiles // write sent → first answer showing it, ms
	LatencyAfterReply                     map[string]quantiles // API server's reply → first answer showing it, ms (0 if sooner)
	WriteRTT                              quantiles            // write sent → API server's reply, ms
	SteadyRSS, PeakRSS                    map[string]int64
	CPU                                   map[string]float64 // seconds used while the writers ran, by process and for the machine
}

// quantiles summarise durations in milliseconds.
type quantiles struct {
	N             int
	P50, P99, Max float64
	TimedOut      int // at latencyTimeout
}

func summarise(d []time.Duration) quantiles {
	if len(d) == 0 {
		return quantiles{}
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	q := quantiles{N: len(d), P50: ms(d[len(d)/2]), P99: ms(d[len(d)*99/100]), Max: ms(d[len(d)-1])}
	for _, x := range d {
		if x >= latencyTimeout {
			q.TimedOut++
		}
	}
	return q
}

func runChurn(ctx context.Context, e *env) (*churnResult, error) {
	cfg := e.cfg
	w, err := newWriter(e.cluster.RESTConfig(), (cfg.writers+writersPerConn-1)/writersPerConn)
	if err != nil {
		return nil, err
	}
	res := &churnResult{Writers: cfg.writers, Conns: len(w.clients), StaleAfter1s: map[string]int{},
		SettleSeconds: map[string]float64{}, NeverSettled: map[string]int{}, SteadyRSS: map[string]int64{}, PeakRSS: map[string]int64{}}
	for _, s := range e.servers {
		cur, _, err := s.rss()
		if err != nil {
			return nil, err
		}
		res.SteadyRSS[s.key] = cur
		if err := s.resetPeak(); err != nil {
			return nil, err
		}
	}
	probes, rest := e.fix.services[:probeServices], e.fix.services[probeServices:]
	stopCheck := startCheck(ctx, e.servers, e.fix.services, cfg.checkRate, false)
	writing, stopWriting := context.WithTimeout(ctx, cfg.churnDuration)
	defer stopWriting()
	meter := newCPUMeter(e)
	start := time.Now()
	var wg sync.WaitGroup
	var lat latencies
	wg.Go(func() { w.run(writing, rest, cfg.writers, cfg.churnRate) })
	for i, t := range probes {
		wg.Go(func() { lat.probe(writing, w, w.clients[i%len(w.clients)], t, e.servers) })
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.CPU = meter.since()
	stopped := time.Now()
	for _, t := range e.fix.services {
		t.settleHere()
	}
	res.SliceUpdates, res.ServiceUpdates, res.Deletes, res.Failed = w.slices.Load()+w.dels.Load(), w.svcs.Load(), w.dels.Load(), w.failed.Load()
	res.Rate = float64(w.accepted()) / res.Seconds
	res.Latency, res.LatencyAfterReply, res.WriteRTT = lat.summary()
	time.Sleep(time.Until(stopped.Add(time.Second)))
	res.Check = stopCheck()
	for _, s := range e.servers {
		res.StaleAfter1s[s.key] = len(stale(ctx, s, e.fix.services))
	}
	for _, s := range e.servers {
		took, never := settle(ctx, s, e.fix.services, 30*time.Second)
		res.SettleSeconds[s.key], res.NeverSettled[s.key] = took.Seconds(), never
		_, peak, err := s.rss()
		if err != nil {
			return nil, err
		}
		res.PeakRSS[s.key] = peak
	}
	logf("churn: %.0f writes/s accepted, %d failed; latency %v", res.Rate, res.Failed, res.Latency)
	return res, ctx.Err()
}

// latencies collects the probers' measurements.
type latencies struct {
	mu         sync.Mutex
	byServer   map[string][]time.Duration // from the request leaving
	afterReply map[string][]time.Duration // from the API server's reply
	rtt        []time.Duration
}

// record adds one write's latencies: by server from the request leaving,
// and from the API server's reply (the part that is the DNS server's:
// the write is in etcd and on its way to the watches by then; an answer
// that showed it even sooner counts 0).
func (l *latencies) record(servers []*server, seen []time.Duration, rtt time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byServer == nil {
		l.byServer, l.afterReply = map[string][]time.Duration{}, map[string][]time.Duration{}
	}
	for i, s := range servers {
		l.byServer[s.key] = append(l.byServer[s.key], seen[i])
		l.afterReply[s.key] = append(l.afterReply[s.key], max(0, seen[i]-rtt))
	}
	l.rtt = append(l.rtt, rtt)
}

func (l *latencies) summary() (sent, replied map[string]quantiles, rtt quantiles) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent, replied = map[string]quantiles{}, map[string]quantiles{}
	for k, d := range l.byServer {
		sent[k] = summarise(d)
	}
	for k, d := range l.afterReply {
		replied[k] = summarise(d)
	}
	return sent, replied, summarise(l.rtt)
}

// probe writes t until ctx ends, one write at a time, and times each from
// the request leaving to the first answer of each server that shows it
// (asked every 2 ms); a pause between writes keeps the probing's own load
// small next to the writers'.
func (l *latencies) probe(ctx context.Context, w *writer, cs kubernetes.Interface, t *tracked, servers []*server) {
	r := rand.New(rand.NewPCG(uint64(len(t.name)), 7))
	for ctx.Err() == nil {
		send := w.plan(t, r)
		h := dnsload.SetHash(t.value())
		sent := time.Now()
		var wg sync.WaitGroup
		seen := make([]time.Duration, len(servers))
		for i, s := range servers {
			wg.Go(func() { seen[i] = waitValue(s, t, h, sent) })
		}
		err := send(context.WithoutCancel(ctx), cs)
		rtt := time.Since(sent)
		wg.Wait()
		if err == nil {
			l.record(servers, seen, rtt)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitValue asks s for t every 2 ms until its answer has the value hash h,
// and returns the time since sent; latencyTimeout at most.
func waitValue(s *server, t *tracked, h uint64, sent time.Time) time.Duration {
	q := dnsload.NewQuerier(s.addr())
	defer q.Close()
	for time.Since(sent) < latencyTimeout {
		r, _, err := q.Ask(t.qname, t.qtype)
		if err == nil {
			if v, ok := answerValue(r); ok && dnsload.SetHash(v) == h {
				return time.Since(sent)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return latencyTimeout
}
