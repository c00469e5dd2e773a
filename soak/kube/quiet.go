package kube

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/soak/server"
	"github.com/schemadns/schemadns/soak/tracked"
)

// The quiet scenario: writers change only an annotation of each headless
// service's EndpointSlice and each ClusterIP Service, as fast as the API
// server accepts, with no checker running. Nothing DNS reads changes, so
// ours should skip every update (coredns_watchcache_updates_skipped_total)
// and spend on each only the informer's decoding; the figure is CPU per
// update, for ours and stock.

// QuietResult is what the quiet scenario measured.
type QuietResult struct {
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

func runQuiet(ctx context.Context, e *env) (*QuietResult, error) {
	cfg := e.cfg
	w, err := tracked.NewWriter(e.cluster.RESTConfig(), (cfg.Writers+tracked.WritersPerConn-1)/tracked.WritersPerConn)
	if err != nil {
		return nil, err
	}
	res := &QuietResult{Writers: cfg.Writers, Skipped: map[string]float64{}, SerialBefore: map[string]uint32{}, SerialAfter: map[string]uint32{}}
	skipped0, err := skippedByResource(e.ours())
	if err != nil {
		return nil, err
	}
	for _, s := range e.servers {
		if res.SerialBefore[s.Key], err = s.SOASerial("cluster.local."); err != nil {
			return nil, err
		}
	}
	writing, stop := context.WithTimeout(ctx, quietDuration(cfg))
	defer stop()
	meter := newCPUMeter(e)
	start := time.Now()
	var slices, svcs, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range cfg.Writers {
		cs := w.Clients[(i/tracked.WritersPerConn)%len(w.Clients)]
		wg.Go(func() {
			for n := i; writing.Err() == nil; n += cfg.Writers {
				t := e.fix.Services[n%len(e.fix.Services)]
				if err := touch(context.WithoutCancel(writing), cs, t, n); err != nil {
					failed.Add(1)
				} else if t.Headless {
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
		if res.SerialAfter[s.Key], err = s.SOASerial("cluster.local."); err != nil {
			return nil, err
		}
	}
	logf("quiet: %d slice and %d service annotation updates in %.1fs, %d failed; ours skipped %v",
		res.SliceUpdates, res.ServiceUpdates, res.Seconds, res.Failed, res.Skipped)
	return res, ctx.Err()
}

// quietDuration is a quarter of the churn's length, at least 5 s.
func quietDuration(cfg *Config) time.Duration { return max(cfg.ChurnDuration/4, 5*time.Second) }

// touch sets an annotation on t's slice (headless) or Service (ClusterIP)
// with a merge patch: nothing else of the object changes. A deleted slice
// (the churn leaves some) is not found, and counted as failed.
func touch(ctx context.Context, cs kubernetes.Interface, t *tracked.Service, n int) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"soak.schemadns.test/touched":"%d"}}}`, n)
	var err error
	if t.Headless {
		_, err = cs.DiscoveryV1().EndpointSlices(t.NS).Patch(ctx, t.SliceName(), "application/merge-patch+json", patch, metav1.PatchOptions{})
	} else {
		_, err = cs.CoreV1().Services(t.NS).Patch(ctx, t.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	}
	return err
}

// skippedByResource reads ours' skipped-update counters of the two
// resources the scenario touches.
func skippedByResource(s *server.Server) (map[string]float64, error) {
	out := map[string]float64{}
	for _, r := range []string{"endpointslices", "services"} {
		v, err := s.Metric("coredns_watchcache_updates_skipped_total", `resource="`+r+`"`)
		if err != nil {
			return nil, err
		}
		for _, x := range v {
			out[r] += x
		}
	}
	return out, nil
}
