package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The quiet scenario: writers change only an annotation of each headless
// service's EndpointSlice and each ClusterIP Service, as fast as the API
// server accepts, with no checker running. Nothing DNS reads changes, so
// ours should skip every update (coredns_watchcache_updates_skipped_total)
// and spend on each only the informer's decoding; the figure is CPU per
// update, for ours and stock.

// quietResult is what the quiet scenario measured.
type quietResult struct {
	Seconds                      float64
	Writers                      int
	SliceUpdates, ServiceUpdates int64
	Failed                       int64
	// Skipped is ours' increase of coredns_watchcache_updates_skipped_total
	// over the scenario, by resource (endpointslices, services).
	Skipped map[string]float64
	// CPU is the seconds each process used from the first write to a second
	// after the last.
	CPU map[string]float64
	// Serial is each server's SOA serial of cluster.local before and after:
	// an update that changes nothing must not move it.
	SerialBefore, SerialAfter map[string]uint32
}

func runQuiet(ctx context.Context, e *env) (*quietResult, error) {
	cfg := e.cfg
	w, err := newWriter(e.cluster.RESTConfig(), (cfg.writers+writersPerConn-1)/writersPerConn)
	if err != nil {
		return nil, err
	}
	res := &quietResult{Writers: cfg.writers, Skipped: map[string]float64{}, SerialBefore: map[string]uint32{}, SerialAfter: map[string]uint32{}}
	skipped0, err := skippedByResource(e.ours())
	if err != nil {
		return nil, err
	}
	for _, s := range e.servers {
		if res.SerialBefore[s.key], err = soaSerial(s, "cluster.local."); err != nil {
			return nil, err
		}
	}
	writing, stop := context.WithTimeout(ctx, quietDuration(cfg))
	defer stop()
	meter := newCPUMeter(e)
	start := time.Now()
	var slices, svcs, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range cfg.writers {
		cs := w.clients[(i/writersPerConn)%len(w.clients)]
		wg.Go(func() {
			for n := i; writing.Err() == nil; n += cfg.writers {
				t := e.fix.services[n%len(e.fix.services)]
				if err := touch(context.WithoutCancel(writing), cs, t, n); err != nil {
					failed.Add(1)
				} else if t.headless {
					slices.Add(1)
				} else {
					svcs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	time.Sleep(time.Second)
	res.CPU = meter.since()
	res.SliceUpdates, res.ServiceUpdates, res.Failed = slices.Load(), svcs.Load(), failed.Load()
	skipped1, err := skippedByResource(e.ours())
	if err != nil {
		return nil, err
	}
	for k, v := range skipped1 {
		res.Skipped[k] = v - skipped0[k]
	}
	for _, s := range e.servers {
		if res.SerialAfter[s.key], err = soaSerial(s, "cluster.local."); err != nil {
			return nil, err
		}
	}
	logf("quiet: %d slice and %d service annotation updates in %.1fs, %d failed; ours skipped %v",
		res.SliceUpdates, res.ServiceUpdates, res.Seconds, res.Failed, res.Skipped)
	return res, ctx.Err()
}

// quietDuration is a quarter of the churn's length, at least 5 s.
func quietDuration(cfg *config) time.Duration { return max(cfg.churnDuration/4, 5*time.Second) }

// touch sets an annotation on t's slice (headless) or Service (ClusterIP)
// with a merge patch: nothing else of the object changes. A deleted slice
// (the churn leaves some) is not found, and counted as failed.
func touch(ctx context.Context, cs kubernetes.Interface, t *tracked, n int) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"soak.schemadns.test/touched":"%d"}}}`, n)
	var err error
	if t.headless {
		_, err = cs.DiscoveryV1().EndpointSlices(t.ns).Patch(ctx, t.sliceName(), "application/merge-patch+json", patch, metav1.PatchOptions{})
	} else {
		_, err = cs.CoreV1().Services(t.ns).Patch(ctx, t.name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	}
	return err
}

// skippedByResource reads ours' skipped-update counters of the two
// resources the scenario touches.
func skippedByResource(s *server) (map[string]float64, error) {
	out := map[string]float64{}
	for _, r := range []string{"endpointslices", "services"} {
		v, err := s.metric("coredns_watchcache_updates_skipped_total", `resource="`+r+`"`)
		if err != nil {
			return nil, err
		}
		for _, x := range v {
			out[r] += x
		}
	}
	return out, nil
}

// soaSerial is the serial of the SOA record s answers for zone.
func soaSerial(s *server, zone string) (uint32, error) {
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(question(zone, dns.TypeSOA), s.addr())
	if err != nil {
		return 0, fmt.Errorf("SOA of %s: %w", s, err)
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, nil
		}
	}
	return 0, fmt.Errorf("SOA of %s: no SOA in the answer (%s)", s, dns.RcodeToString[r.Rcode])
}
