package tracked

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/soak/observe"
)

// WritersPerConn is how many writers share one HTTP/2 connection: the API
// server handles a connection's streams on its own goroutines, but one
// connection's TLS stream is read by one goroutine on each side.
const WritersPerConn = 8

// DeleteEvery: one in this many writes of a headless service deletes its
// slice (the next write creates it again), so the checker sees deletions.
const DeleteEvery = 20

// nextAddr numbers the addresses written, from churnBase, over every
// writer of the run: an address is never written twice, so no state can
// repeat one of another write (or of the same slice).
var nextAddr atomic.Uint32

// Writer rewrites services through the API server, as fast as it accepts
// them or at a given rate, and counts what it wrote.
type Writer struct {
	Clients            []kubernetes.Interface // one connection each
	Slices, Svcs, Dels atomic.Int64           // writes accepted, by kind
	Failed             atomic.Int64           // writes refused or failed
}

// NewWriter makes n clientsets with a connection each: a custom dialer
// keeps client-go from sharing one transport between them.
func NewWriter(rc *rest.Config, n int) (*Writer, error) {
	w := &Writer{}
	for range max(1, n) {
		pc := protobufConfig(rc)
		pc.Dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		cs, err := kubernetes.NewForConfig(pc)
		if err != nil {
			return nil, fmt.Errorf("writer clientset: %w", err)
		}
		w.Clients = append(w.Clients, cs)
	}
	return w, nil
}

// Accepted is the writes the API server accepted.
func (w *Writer) Accepted() int64 { return w.Slices.Load() + w.Svcs.Load() + w.Dels.Load() }

// Write changes t once through client cs (plan, then send).
func (w *Writer) Write(ctx context.Context, cs kubernetes.Interface, t *Service, r *rand.Rand) error {
	return w.Plan(t, r)(ctx, cs)
}

// Plan changes t's state once and registers it, and returns the request
// that writes it: a ClusterIP service gets a new port; a headless
// service's slice gets one address replaced, or is deleted, or is created
// again after a deletion. Registering before the request leaves means no
// server can show a state the checker does not know.
func (w *Writer) Plan(t *Service, r *rand.Rand) func(context.Context, kubernetes.Interface) error {
	switch {
	case !t.Headless:
		t.port = int32(1000 + (t.seq+1)%30000)
		seq := t.register()
		svc := t.Svc.DeepCopy()
		svc.ResourceVersion = "" // only this writer writes it: unconditional
		svc.Spec.Ports[0].Port = t.port
		return func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Services(t.NS).Update(ctx, svc, metav1.UpdateOptions{})
			return w.done(t, seq, err, &w.Svcs)
		}
	case t.deleted:
		t.deleted = false
		seq := t.register()
		sl := t.slice()
		return func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.DiscoveryV1().EndpointSlices(t.NS).Create(ctx, sl, metav1.CreateOptions{})
			return w.done(t, seq, err, &w.Slices)
		}
	case r.IntN(DeleteEvery) == 0:
		t.deleted = true
		seq := t.register()
		return func(ctx context.Context, cs kubernetes.Interface) error {
			err := cs.DiscoveryV1().EndpointSlices(t.NS).Delete(ctx, t.SliceName(), metav1.DeleteOptions{})
			return w.done(t, seq, err, &w.Dels)
		}
	}
	t.addrs[t.seq%len(t.addrs)] = dnsload.AddrNum(observe.Nth(churnBase, nextAddr.Add(1)))
	seq := t.register()
	sl := t.slice()
	return func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.DiscoveryV1().EndpointSlices(t.NS).Update(ctx, sl, metav1.UpdateOptions{})
		return w.done(t, seq, err, &w.Slices)
	}
}

// done counts a write. A create that finds the slice there, or a delete
// that finds it gone, means an earlier try went through after all (a
// timeout): the state is the one intended.
func (w *Writer) done(t *Service, seq int, err error, n *atomic.Int64) error {
	if apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		err = nil
	}
	if err != nil {
		w.Failed.Add(1)
		return err
	}
	t.accepted(seq)
	n.Add(1)
	return nil
}

// Run has `writers` goroutines rewrite services until ctx ends, each
// owning every writers-th service of list (so a service's writes go one
// after the other) and picking among them at random. rate > 0 caps the
// total writes per second; 0 writes as fast as the API server accepts.
func (w *Writer) Run(ctx context.Context, list []*Service, writers, rate int) {
	var tokens chan struct{}
	if rate > 0 {
		tokens = make(chan struct{}, writers)
		go dnsload.Pace(ctx, tokens, rate)
	}
	var wg sync.WaitGroup
	for i := range writers {
		var mine []*Service
		for j := i; j < len(list); j += writers {
			mine = append(mine, list[j])
		}
		if len(mine) == 0 {
			continue
		}
		cs := w.Clients[(i/WritersPerConn)%len(w.Clients)]
		r := rand.New(rand.NewPCG(uint64(i), 14))
		wg.Go(func() {
			for ctx.Err() == nil {
				if tokens != nil {
					select {
					case <-ctx.Done():
						return
					case <-tokens:
					}
				}
				// Writes in flight when ctx ends still run to completion: a
				// cancelled write leaves its state uncertain.
				w.Write(context.WithoutCancel(ctx), cs, mine[r.IntN(len(mine))], r)
			}
		})
	}
	wg.Wait()
}
