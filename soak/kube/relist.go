package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/server"
	"github.com/schemadns/schemadns/soak/tracked"
)

// RelistResult is the forced relist's outcome.
type RelistResult struct {
	Revision          int64            // etcd compacted to
	DownSeconds       float64          // the API server's outage, compaction included
	SteadyRSS         map[string]int64 // just before
	PeakRSS           map[string]int64 // VmHWM from just before until the changes were served
	Relists           float64          // ours: coredns_watchcache_relists_total, increase
	Check             map[string]observe.Count
	Recovery          map[string]float64
	RecoveryFailed    map[string]int
	RelistWaitSeconds float64 // after the restart, until ours had relisted every resource
}

// ratio is a server's peak over its steady RSS.
func (r *RelistResult) ratio(key string) float64 {
	if r.SteadyRSS[key] == 0 {
		return 0
	}
	return float64(r.PeakRSS[key]) / float64(r.SteadyRSS[key])
}

// runRelist stops the API server, compacts etcd to its current revision
// and starts the API server again: every watch's resource version is then
// compacted away, so every informer gets 410 Gone and lists again. The
// checker runs throughout; the servers' VmHWM is reset just before.
func runRelist(ctx context.Context, e *env) (*RelistResult, error) {
	res := &RelistResult{SteadyRSS: map[string]int64{}, PeakRSS: map[string]int64{}}
	before, err := relistCount(e.ours())
	if err != nil {
		return nil, err
	}
	stopCheck := tracked.StartCheck(ctx, e.servers, e.checkedNames(), e.cfg.CheckRate, true)
	defer func() {
		if res.Check == nil {
			stopCheck()
		}
	}()
	time.Sleep(2 * time.Second)
	for _, s := range e.servers {
		if res.SteadyRSS[s.Key], _, err = s.RSS(); err != nil {
			return nil, err
		}
		if err := s.ResetPeak(); err != nil {
			return nil, err
		}
	}
	down := time.Now()
	if err := e.cluster.StopAPIServer(); err != nil {
		return nil, fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if res.Revision, err = e.cluster.CompactEtcd(ctx); err != nil {
		return nil, err
	}
	logf("relist: etcd compacted at revision %d", res.Revision)
	if err := e.cluster.StartAPIServer(ctx); err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	up := time.Now()
	res.DownSeconds = up.Sub(down).Seconds()
	if res.Recovery, res.RecoveryFailed, err = e.recovery(ctx, up); err != nil {
		return res, err
	}
	res.RelistWaitSeconds, res.Relists = waitRelists(ctx, e.ours(), before, up)
	time.Sleep(3 * time.Second) // the stock plugin has no relist counter: give it time too
	res.Check = stopCheck()
	for _, s := range e.servers {
		if _, res.PeakRSS[s.Key], err = s.RSS(); err != nil {
			return res, err
		}
	}
	logf("relist: ours %.2f× steady RSS, stock %.2f×", res.ratio(KeyOurs), res.ratio(KeyStock))
	return res, nil
}

// relistCount is ours' relists so far, all resources.
func relistCount(s *server.Server) (float64, error) {
	return s.SumMetric("coredns_watchcache_relists_total")
}

// relistedResources is how many resources ours watches (services,
// EndpointSlices, ServiceImports): each relists once.
const relistedResources = 3

// waitRelists waits up to a minute for ours to count a relist of each
// resource, and returns the seconds since up and the increase seen.
func waitRelists(ctx context.Context, s *server.Server, before float64, up time.Time) (float64, float64) {
	var n float64
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		now, err := relistCount(s)
		if err != nil {
			continue
		}
		if n = now - before; n >= relistedResources {
			break
		}
	}
	return time.Since(up).Seconds(), n
}
