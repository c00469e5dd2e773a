package kube

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/server"
	"github.com/schemadns/schemadns/soak/tracked"
)

// The churn: client-go writers rewrite EndpointSlices and Services as fast
// as the API server takes them while a checker asks both servers for every
// rewritten name and judges each answer (tracked.Service.judge); probers time the
// programming latency on services of their own; the servers' peak RSS is
// their VmHWM from the start of the writing.

// probeServices are the services the latency probers write, one each;
// the writers leave them alone.
const probeServices = 8

// ChurnResult is what the churn measured.
type ChurnResult struct {
	Seconds                               float64
	Writers, Conns                        int
	SliceUpdates, ServiceUpdates, Deletes int64 // deletions and re-creations of slices count as slice updates too
	Failed                                int64
	Rate                                  float64 // accepted writes per second
	Check                                 map[string]observe.Count
	StaleAfter1s                          map[string]int     // names not at their last write 1 s after the writers stopped
	SettleSeconds                         map[string]float64 // until every name showed its last write
	NeverSettled                          map[string]int
	Latency                               map[string]observe.Quantiles // write sent → first answer showing it, ms
	LatencyAfterReply                     map[string]observe.Quantiles // API server's reply → first answer showing it, ms (0 if sooner)
	WriteRTT                              observe.Quantiles            // write sent → API server's reply, ms
	SteadyRSS, PeakRSS                    map[string]int64
	CPU                                   map[string]float64 // seconds used while the writers ran, by process and for the machine
}

func runChurn(ctx context.Context, e *env) (*ChurnResult, error) {
	cfg := e.cfg
	w, err := tracked.NewWriter(e.cluster.RESTConfig(), (cfg.Writers+tracked.WritersPerConn-1)/tracked.WritersPerConn)
	if err != nil {
		return nil, err
	}
	res := &ChurnResult{Writers: cfg.Writers, Conns: len(w.Clients), StaleAfter1s: map[string]int{},
		SettleSeconds: map[string]float64{}, NeverSettled: map[string]int{}, SteadyRSS: map[string]int64{}, PeakRSS: map[string]int64{}}
	for _, s := range e.servers {
		cur, _, err := s.RSS()
		if err != nil {
			return nil, err
		}
		res.SteadyRSS[s.Key] = cur
		if err := s.ResetPeak(); err != nil {
			return nil, err
		}
	}
	probes, rest := e.fix.Services[:probeServices], e.fix.Services[probeServices:]
	stopCheck := tracked.StartCheck(ctx, e.servers, e.fix.Services, cfg.CheckRate, false)
	writing, stopWriting := context.WithTimeout(ctx, cfg.ChurnDuration)
	defer stopWriting()
	meter := newCPUMeter(e)
	start := time.Now()
	var wg sync.WaitGroup
	var lat latencies
	wg.Go(func() { w.Run(writing, rest, cfg.Writers, cfg.ChurnRate) })
	for i, t := range probes {
		wg.Go(func() { lat.probe(writing, w, w.Clients[i%len(w.Clients)], t, e.servers) })
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.CPU = meter.since()
	stopped := time.Now()
	for _, t := range e.fix.Services {
		t.SettleHere()
	}
	res.SliceUpdates, res.ServiceUpdates, res.Deletes, res.Failed = w.Slices.Load()+w.Dels.Load(), w.Svcs.Load(), w.Dels.Load(), w.Failed.Load()
	res.Rate = float64(w.Accepted()) / res.Seconds
	res.Latency, res.LatencyAfterReply, res.WriteRTT = lat.summary()
	time.Sleep(time.Until(stopped.Add(time.Second)))
	res.Check = stopCheck()
	for _, s := range e.servers {
		res.StaleAfter1s[s.Key] = len(tracked.Stale(ctx, s, e.fix.Services))
	}
	for _, s := range e.servers {
		took, never := tracked.Settle(ctx, s, e.fix.Services, 30*time.Second)
		res.SettleSeconds[s.Key], res.NeverSettled[s.Key] = took.Seconds(), never
		_, peak, err := s.RSS()
		if err != nil {
			return nil, err
		}
		res.PeakRSS[s.Key] = peak
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
func (l *latencies) record(servers []*server.Server, seen []time.Duration, rtt time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byServer == nil {
		l.byServer, l.afterReply = map[string][]time.Duration{}, map[string][]time.Duration{}
	}
	for i, s := range servers {
		l.byServer[s.Key] = append(l.byServer[s.Key], seen[i])
		l.afterReply[s.Key] = append(l.afterReply[s.Key], max(0, seen[i]-rtt))
	}
	l.rtt = append(l.rtt, rtt)
}

func (l *latencies) summary() (sent, replied map[string]observe.Quantiles, rtt observe.Quantiles) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent, replied = map[string]observe.Quantiles{}, map[string]observe.Quantiles{}
	for k, d := range l.byServer {
		sent[k] = observe.Summarise(d)
	}
	for k, d := range l.afterReply {
		replied[k] = observe.Summarise(d)
	}
	return sent, replied, observe.Summarise(l.rtt)
}

// probe writes t until ctx ends, one write at a time, and times each from
// the request leaving to the first answer of each server that shows it
// (asked every 2 ms); a pause between writes keeps the probing's own load
// small next to the writers'.
func (l *latencies) probe(ctx context.Context, w *tracked.Writer, cs kubernetes.Interface, t *tracked.Service, servers []*server.Server) {
	r := rand.New(rand.NewPCG(uint64(len(t.Name)), 7))
	for ctx.Err() == nil {
		send := w.Plan(t, r)
		h := dnsload.SetHash(t.Value())
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
// and returns the time since sent; observe.LatencyTimeout at most.
func waitValue(s *server.Server, t *tracked.Service, h uint64, sent time.Time) time.Duration {
	q := dnsload.NewQuerier(s.Addr())
	defer q.Close()
	for time.Since(sent) < observe.LatencyTimeout {
		r, _, err := q.Ask(t.QName, t.QType)
		if err == nil {
			if v, ok := tracked.AnswerValue(r); ok && dnsload.SetHash(v) == h {
				return time.Since(sent)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return observe.LatencyTimeout
}
