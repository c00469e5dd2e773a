package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/kubeapi"
	"github.com/schemadns/schemadns/internal/procstat"
	"github.com/schemadns/schemadns/internal/toolflags"
)

// The forced relist of the threshold shape, as make soak forces it: the
// API server stopped, etcd compacted to its latest revision, the API
// server started again. Every watch then resumes from a resource version
// that is gone, so each informer must list everything again while it still
// holds what it had: the moment a DNS server needs the most memory. Each
// server is measured alone, freshly started, with no query load.

const (
	// relistIdle: once every resource has listed again, the relist is
	// over when the server's CPU stayed under relistIdleShare of a core
	// for this long.
	relistIdle      = 2 * time.Second
	relistIdleShare = 0.05
	// relistGiveUp: a resource that has not listed this long after the
	// API server is ready (client-go's backoff is at most 30 s) is taken
	// as not relisting; the wait ends at the next idle moment.
	relistGiveUp = 90 * time.Second
	// relistMax bounds the whole wait.
	relistMax = 15 * time.Minute
)

// relist starts t alone, lets it settle, forces the relist and measures
// it; the server is stopped at the end.
func (r *shapeRun) relist(ctx context.Context, t server.Target, audit string) (*results.RelistResult, error) {
	s, err := r.launch(ctx, t)
	if err != nil {
		return nil, err
	}
	defer r.stop(t.Key)
	if err := toolflags.SleepCtx(ctx, results.RelistSettle); err != nil {
		return nil, err
	}
	res := &results.RelistResult{}
	resources, err := r.watched(s)
	if err != nil {
		return nil, err
	}
	if res.SteadyRSS, _, err = procstat.RSS(s.PID()); err != nil {
		return nil, err
	}
	res.SteadyHeap = heapInuse(s)
	if err := procstat.ResetPeak(s.PID()); err != nil {
		return nil, err
	}
	offset := kubeapi.AuditSize(audit)
	heap := sampleHeap(s)
	defer heap.End()
	down := time.Now()
	if err := r.cluster.StopAPIServer(); err != nil {
		return nil, fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if res.Revision, err = r.cluster.CompactEtcd(ctx); err != nil {
		return nil, err
	}
	if err := r.cluster.StartAPIServer(ctx); err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	up := time.Now()
	res.DownSeconds = up.Sub(down).Seconds()
	logf("relist of %s: API server down %.1f s, etcd compacted at revision %d", s, res.DownSeconds, res.Revision)
	if res.Resources, err = r.awaitRelist(ctx, s, resources, audit, offset, up); err != nil {
		return res, err
	}
	res.Seconds = time.Since(up).Seconds()
	if _, res.PeakRSS, err = procstat.RSS(s.PID()); err != nil {
		return res, err
	}
	res.PeakHeap, res.HeapSamples = heap.End(), heap.Samples()
	if err := s.WaitSynced(ctx, r.thr.probes(r.sr.Run.Pods), time.Minute); err != nil {
		res.AnswersAfter = err.Error()
	}
	logf("relist of %s: %s; steady RSS %.1f MiB, peak %.1f MiB (%.2f×), heap %.1f → peak %.1f MiB (%d samples), over %.1f s after the API server was back",
		s, results.RelistText(res), float64(res.SteadyRSS)/mib, float64(res.PeakRSS)/mib, float64(res.PeakRSS)/float64(res.SteadyRSS),
		float64(res.SteadyHeap)/mib, float64(res.PeakHeap)/mib, res.HeapSamples, res.Seconds)
	return res, nil
}

// stockResources are the informers stock runs: its namespace informer
// always, the pod informer with pods verified.
func stockResources(pods string) []string {
	out := []string{"endpointslices", "namespaces", "services"}
	if pods == "verified" {
		out = append(out, "pods")
	}
	return out
}

// watched are the resources s watches, each with ours' relist counter:
// for ours those of its informers gauge, for stock stockResources.
func (r *shapeRun) watched(s *server.Server) ([]results.ResourceRelist, error) {
	if s.Key != server.KeyOurs {
		var out []results.ResourceRelist
		for _, res := range stockResources(r.sr.Run.Pods) {
			out = append(out, results.ResourceRelist{Resource: res, Before: -1, After: -1})
		}
		return out, nil
	}
	informers, err := s.MetricByLabel("coredns_watchcache_informers", "resource")
	if err != nil {
		return nil, err
	}
	relists, err := s.MetricByLabel("coredns_watchcache_relists_total", "resource")
	if err != nil {
		return nil, err
	}
	var out []results.ResourceRelist
	for _, res := range slices.Sorted(maps.Keys(informers)) {
		if informers[res] > 0 {
			out = append(out, results.ResourceRelist{Resource: res, Before: relists[res]})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no informer in coredns_watchcache_informers", s)
	}
	return out, nil
}

// awaitRelist waits until every resource has been listed again and the
// server has been idle for relistIdle, or, past relistGiveUp, only until
// it is idle; it returns the resources with their lists and counters.
func (r *shapeRun) awaitRelist(ctx context.Context, s *server.Server, resources []results.ResourceRelist, audit string, offset int64, up time.Time) ([]results.ResourceRelist, error) {
	idle := newIdleWatch(s.PID())
	end := up.Add(relistMax)
	for {
		lists, err := auditLists(audit, offset, s.Key)
		if err != nil {
			return resources, err
		}
		var counters map[string]float64
		if s.Key == server.KeyOurs {
			if counters, err = s.MetricByLabel("coredns_watchcache_relists_total", "resource"); err != nil {
				return resources, err
			}
		}
		done := true
		for i := range resources {
			rr := &resources[i]
			rr.Lists = lists[rr.Resource]
			if rr.Before >= 0 {
				rr.After = counters[rr.Resource]
			}
			done = done && rr.Relisted()
		}
		quiet := idle.check()
		switch {
		case quiet && (done || time.Since(up) > relistGiveUp):
			return resources, nil
		case time.Now().After(end):
			return resources, fmt.Errorf("%s still busy or not relisted %s after the API server was back", s, relistMax)
		}
		if err := toolflags.SleepCtx(ctx, 250*time.Millisecond); err != nil {
			return resources, err
		}
	}
}

// idleWatch tells whether a process used less than relistIdleShare of a
// core over the last relistIdle.
type idleWatch struct {
	pid     int
	samples []cpuSample
}

type cpuSample struct {
	at  time.Time
	cpu float64
}

func newIdleWatch(pid int) *idleWatch { return &idleWatch{pid: pid} }

// check takes a sample and tells whether the process was idle over the
// last relistIdle (false until that much has been sampled).
func (w *idleWatch) check() bool {
	now := time.Now()
	cpu, err := procstat.CPUSeconds(w.pid)
	if err != nil {
		return false
	}
	w.samples = append(w.samples, cpuSample{now, cpu})
	k := 0
	for k+1 < len(w.samples) && now.Sub(w.samples[k+1].at) >= relistIdle {
		k++
	}
	w.samples = w.samples[k:]
	first := w.samples[0]
	span := now.Sub(first.at)
	return span >= relistIdle && cpu-first.cpu < relistIdleShare*span.Seconds()
}

// heapInuse is the server's go_memstats_heap_inuse_bytes, 0 when it
// cannot be read.
func heapInuse(s *server.Server) int64 {
	m, err := s.MetricByLabel("go_memstats_heap_inuse_bytes", "")
	if err != nil {
		return 0
	}
	return int64(m[""])
}

// sampleHeap samples the server's heap in use every results.RelistSample.
func sampleHeap(s *server.Server) *server.PeakWatch {
	return server.WatchPeak(results.RelistSample, func() (int64, bool) {
		v := heapInuse(s)
		return v, v > 0
	})
}
