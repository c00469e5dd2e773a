package main

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

	"github.com/schemadns/schemadns/test/dnsload"
)

// writersPerConn is how many writers share one HTTP/2 connection: the API
// server handles a connection's streams on its own goroutines, but one
// connection's TLS stream is read by one goroutine on each side.
const writersPerConn = 8

// deleteEvery: one in this many writes of a headless service deletes its
// slice (the next write creates it again), so the checker sees deletions.
const deleteEvery = 20

// nextAddr numbers the addresses written, from churnBase, over every
// writer of the run: an address is never written twice, so no state can
// repeat one of another write (or of the same slice).
var nextAddr atomic.Uint32

// writer rewrites services through the API server, as fast as it accepts
// them or at a given rate, and counts what it wrote.
type writer struct {
	clients            []kubernetes.Interface // one connection each
	slices, svcs, dels atomic.Int64           // writes accepted, by kind
	failed             atomic.Int64           // writes refused or failed
}

// newWriter makes n clientsets with a connection each: a custom dialer
// keeps client-go from sharing one transport between them.
func newWriter(rc *rest.Config, n int) (*writer, error) {
	w := &writer{}
	for range max(1, n) {
		pc := protobufConfig(rc)
		pc.Dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		cs, err := kubernetes.NewForConfig(pc)
		if err != nil {
			return nil, fmt.Errorf("writer clientset: %w", err)
		}
		w.clients = append(w.clients, cs)
	}
	return w, nil
}

func (w *writer) accepted() int64 { return w.slices.Load() + w.svcs.Load() + w.dels.Load() }

// write changes t once through client cs (plan, then send).
func (w *writer) write(ctx context.Context, cs kubernetes.Interface, t *tracked, r *rand.Rand) error {
	return w.plan(t, r)(ctx, cs)
}

// plan changes t's state once and registers it, and returns the request
// that writes it: a ClusterIP service gets a new port; a headless
// service's slice gets one address replaced, or is deleted, or is created
// again after a deletion. Registering before the request leaves means no
// server can show a state the checker does not know.
func (w *writer) plan(t *tracked, r *rand.Rand) func(context.Context, kubernetes.Interface) error {
	switch {
	case !t.headless:
		t.port = int32(1000 + (t.seq+1)%30000)
		seq := t.register()
		svc := t.svc.DeepCopy()
		svc.ResourceVersion = "" // only this writer writes it: unconditional
		svc.Spec.Ports[0].Port = t.port
		return func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Services(t.ns).Update(ctx, svc, metav1.UpdateOptions{})
			return w.done(t, seq, err, &w.svcs)
		}
	case t.deleted:
		t.deleted = false
		seq := t.register()
		sl := t.slice()
		return func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.DiscoveryV1().EndpointSlices(t.ns).Create(ctx, sl, metav1.CreateOptions{})
			return w.done(t, seq, err, &w.slices)
		}
	case r.IntN(deleteEvery) == 0:
		t.deleted = true
		seq := t.register()
		return func(ctx context.Context, cs kubernetes.Interface) error {
			err := cs.DiscoveryV1().EndpointSlices(t.ns).Delete(ctx, t.sliceName(), metav1.DeleteOptions{})
			return w.done(t, seq, err, &w.dels)
		}
	}
	t.addrs[t.seq%len(t.addrs)] = dnsload.AddrNum(nth(churnBase, nextAddr.Add(1)))
	seq := t.register()
	sl := t.slice()
	return func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.DiscoveryV1().EndpointSlices(t.ns).Update(ctx, sl, metav1.UpdateOptions{})
		return w.done(t, seq, err, &w.slices)
	}
}

// done counts a write. A create that finds the slice there, or a delete
// that finds it gone, means an earlier try went through after all (a
// timeout): the state is the one intended.
func (w *writer) done(t *tracked, seq int, err error, n *atomic.Int64) error {
	if apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		err = nil
	}
	if err != nil {
		w.failed.Add(1)
		return err
	}
	t.accepted(seq)
	n.Add(1)
	return nil
}

// run has `writers` goroutines rewrite services until ctx ends, each
// owning every writers-th service of list (so a service's writes go one
// after the other) and picking among them at random. rate > 0 caps the
// total writes per second; 0 writes as fast as the API server accepts.
func (w *writer) run(ctx context.Context, list []*tracked, writers, rate int) {
	var tokens chan struct{}
	if rate > 0 {
		tokens = make(chan struct{}, writers)
		go dnsload.Pace(ctx, tokens, rate)
	}
	var wg sync.WaitGroup
	for i := range writers {
		var mine []*tracked
		for j := i; j < len(list); j += writers {
			mine = append(mine, list[j])
		}
		if len(mine) == 0 {
			continue
		}
		cs := w.clients[(i/writersPerConn)%len(w.clients)]
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
				w.write(context.WithoutCancel(ctx), cs, mine[r.IntN(len(mine))], r)
			}
		})
	}
	wg.Wait()
}
