package clustershape

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LoadOptions tune Load; the zero value is ready to use.
type LoadOptions struct {
	// Writers are the requests in flight at once; default 32. The API
	// server queues what its CPU cannot take, so more only adds latency.
	Writers int
	// Progress, if set, is called every ProgressEvery (default 10 s) and
	// once at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// FieldManager names the writer in managedFields; default
	// "clustershape".
	FieldManager string
}

// Progress is how far a Load has come.
type Progress struct {
	// Services, Slices and Pods written so far (a pod once its status is).
	Services, Slices, Pods int
	// Of Total objects: namespaces aside, services, slices and pods.
	Done, Total int
	Retries     int
	Elapsed     time.Duration
}

func (p Progress) String() string {
	rate := float64(p.Done) / max(p.Elapsed.Seconds(), 0.001)
	return fmt.Sprintf("%d of %d objects (%d services, %d slices, %d pods) in %.0f s, %.0f/s, %d retries",
		p.Done, p.Total, p.Services, p.Slices, p.Pods, p.Elapsed.Seconds(), rate, p.Retries)
}

// LoadStats are what a Load wrote.
type LoadStats struct {
	Progress
	// Writes are the requests that succeeded, pod status and the
	// namespaces' ServiceAccounts included.
	Writes int
}

// retryFor bounds the retries of one write: the API server may be busy
// for a while (a 429, a timeout), not for minutes.
const retryFor = 3 * time.Minute

// Load writes the layout's objects with the API server at cfg: the
// namespaces, each with its default ServiceAccount (pods need it where the
// ServiceAccount admission plugin runs), then every service and its
// slices, and every pod and its status, by Writers at once, in protobuf.
// An object that exists already is taken as written (a pod's status is
// written again), so a Load that was cut short can be run again. Busy
// answers and dropped connections are retried, for a while.
func Load(ctx context.Context, cfg *rest.Config, l *Layout, o LoadOptions) (LoadStats, error) {
	c, err := loadClient(cfg)
	if err != nil {
		return LoadStats{}, err
	}
	if o.Writers <= 0 {
		o.Writers = 32
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 10 * time.Second
	}
	if o.FieldManager == "" {
		o.FieldManager = "clustershape"
	}
	ld := &loader{c: c, l: l, o: o, start: time.Now()}
	counts := l.Counts()
	ld.total = counts.Services + counts.Slices + counts.Pods
	if err := ld.namespaces(ctx); err != nil {
		return ld.stats(), err
	}
	stop := ld.report(ctx)
	err = ld.objects(ctx)
	stop()
	return ld.stats(), err
}

// loadClient is cfg with protobuf, the API server's cheapest encoding,
// and no client-side rate limit: the server's own limits apply.
func loadClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clustershape: client: %w", err)
	}
	return c, nil
}

// loader is one Load's state.
type loader struct {
	c     kubernetes.Interface
	l     *Layout
	o     LoadOptions
	start time.Time
	total int

	services, slices, pods, retries, writes atomic.Int64
}

func (ld *loader) progress() Progress {
	p := Progress{Services: int(ld.services.Load()), Slices: int(ld.slices.Load()), Pods: int(ld.pods.Load()),
		Total: ld.total, Retries: int(ld.retries.Load()), Elapsed: time.Since(ld.start)}
	p.Done = p.Services + p.Slices + p.Pods
	return p
}

func (ld *loader) stats() LoadStats {
	return LoadStats{Progress: ld.progress(), Writes: int(ld.writes.Load())}
}

// report calls Progress on its period until the returned stop, and then
// once more.
func (ld *loader) report(ctx context.Context) (stop func()) {
	if ld.o.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(ld.o.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				ld.o.Progress(ld.progress())
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		ld.o.Progress(ld.progress())
	}
}

// namespaces creates every namespace and its default ServiceAccount.
func (ld *loader) namespaces(ctx context.Context) error {
	for n := range ld.l.Counts().Namespaces {
		ns := ld.l.NamespaceObject(n)
		err := ld.write(ctx, func() error {
			_, err := ld.c.CoreV1().Namespaces().Create(ctx, ns, ld.create())
			return err
		})
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns.Name, err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
		err = ld.write(ctx, func() error {
			_, err := ld.c.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, ld.create())
			return err
		})
		if err != nil {
			return fmt.Errorf("service account %s/default: %w", ns.Name, err)
		}
	}
	return nil
}

func (ld *loader) create() metav1.CreateOptions {
	return metav1.CreateOptions{FieldManager: ld.o.FieldManager}
}

// objects writes the services with their slices, then the pods with
// their status, by Writers at once; the first error stops them all.
func (ld *loader) objects(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	counts := ld.l.Counts()
	work := make(chan func(context.Context) error)
	var wg sync.WaitGroup
	for range ld.o.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				if err := w(ctx); err != nil {
					cancel(err)
				}
			}
		}()
	}
	feed := func(w func(context.Context) error) bool {
		select {
		case work <- w:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for i := range counts.Services {
		if !feed(func(ctx context.Context) error { return ld.service(ctx, i) }) {
			break
		}
	}
	for i := range counts.Pods {
		if !feed(func(ctx context.Context) error { return ld.pod(ctx, i) }) {
			break
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// service writes service i, then its slices.
func (ld *loader) service(ctx context.Context, i int) error {
	svc := ld.l.Service(i)
	err := ld.write(ctx, func() error {
		_, err := ld.c.CoreV1().Services(svc.Namespace).Create(ctx, svc, ld.create())
		return err
	})
	if err != nil {
		return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	ld.services.Add(1)
	for _, sl := range ld.l.Slices(i) {
		err := ld.write(ctx, func() error {
			_, err := ld.c.DiscoveryV1().EndpointSlices(sl.Namespace).Create(ctx, sl, ld.create())
			return err
		})
		if err != nil {
			return fmt.Errorf("endpointslice %s/%s: %w", sl.Namespace, sl.Name, err)
		}
		ld.slices.Add(1)
	}
	return nil
}

// pod creates pod i and writes its status through the status
// subresource, as a kubelet does (a strategic merge patch).
func (ld *loader) pod(ctx context.Context, i int) error {
	pod := ld.l.Pod(i)
	status, err := json.Marshal(map[string]any{"status": pod.Status})
	if err != nil {
		return err
	}
	err = ld.write(ctx, func() error {
		_, err := ld.c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, ld.create())
		return err
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	err = ld.write(ctx, func() error {
		_, err := ld.c.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, status,
			metav1.PatchOptions{FieldManager: ld.o.FieldManager}, "status")
		return err
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s: status: %w", pod.Namespace, pod.Name, err)
	}
	ld.pods.Add(1)
	return nil
}

// write makes one write, retrying what a busy or restarting API server
// answers; AlreadyExists counts as written.
func (ld *loader) write(ctx context.Context, call func() error) error {
	deadline := time.Now().Add(retryFor)
	wait := 100 * time.Millisecond
	for {
		err := call()
		if err == nil || apierrors.IsAlreadyExists(err) {
			ld.writes.Add(1)
			return nil
		}
		if !retriable(err) || time.Now().After(deadline) {
			return err
		}
		ld.retries.Add(1)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// retriable tells whether err is the API server being busy or out of
// reach for a moment, rather than refusing the object.
func retriable(err error) bool {
	switch {
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
