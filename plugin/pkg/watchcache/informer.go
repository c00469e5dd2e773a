package watchcache

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// informer watches one resource.
type informer struct {
	kind       Resources
	store      cache.Store
	idx        *indexes
	controller cache.Controller
	state      *connState
	// refs counts the handles that asked for this resource; guarded by
	// registry's lock.
	refs   int
	cancel context.CancelFunc
	done   chan struct{}
	// absent: the API server does not serve the resource; nothing is
	// called, so no permission is needed.
	absent bool
	// known is where the decoders find the store (nil in some tests).
	known *knownObjects
}

// listing is how one resource is listed and converted.
type listing struct {
	lw        *cache.ListWatch
	example   runtime.Object
	transform cache.TransformFunc
}

func (c *Cache) listingOf(k Resources) listing {
	sel := func(o *metav1.ListOptions) { o.LabelSelector = c.cfg.LabelSelector }
	all := func(*metav1.ListOptions) {}
	switch k {
	case Services:
		// Decoded into the cached form by the client (codec.go).
		return listing{cache.NewFilteredListWatchFromClient(c.wire.core, "services", metav1.NamespaceAll, sel),
			&Service{}, nil}
	case EndpointSlices:
		return listing{cache.NewFilteredListWatchFromClient(c.wire.slices, "endpointslices", metav1.NamespaceAll, sel),
			&EndpointSlice{}, nil}
	case Namespaces:
		return listing{cache.NewFilteredListWatchFromClient(c.core.CoreV1().RESTClient(), "namespaces", metav1.NamespaceAll, all),
			&corev1.Namespace{}, toNamespace}
	case Pods:
		// Decoded into the cached form by the client (podwire.go), and
		// streamed (listerWatcher).
		return listing{cache.NewFilteredListWatchFromClient(c.wire.core, "pods", metav1.NamespaceAll, all),
			&Pod{}, nil}
	case ServiceCIDRs:
		return listing{cache.NewFilteredListWatchFromClient(c.core.NetworkingV1().RESTClient(), "servicecidrs", metav1.NamespaceAll, all),
			&networkingv1.ServiceCIDR{}, toServiceCIDR}
	default: // ServiceImports: their version is multicluster's to choose
		return c.providedListing(k)
	}
}

// serves tells whether the API server serves resource in groupVersion, by
// discovery. When discovery itself fails (the server is unreachable) it
// says yes: the informer then reports the outage, and retries.
func (c *Cache) serves(groupVersion, resource string) bool {
	list, err := c.core.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return !apierrors.IsNotFound(err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// emptyListWatch stands in for a resource the API server does not serve:
// an empty list, then a watch that sends nothing until it is stopped.
func emptyListWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			// Open and quiet until the informer stops: nothing will ever
			// change. An empty watch, closed at once, is what client-go
			// returns for a dropped connection (isEmptyWatch).
			w := watch.NewFake()
			go func() { <-ctx.Done(); w.Stop() }()
			return w, nil
		},
	}
}

func (c *Cache) newInformer(k Resources) *informer {
	src := c.listingOf(k)
	// ServiceCIDRs are optional: an API server that does not serve them
	// (before Kubernetes 1.33, or with the API turned off) has none.
	absent := k == ServiceCIDRs && !c.serves(networkingv1.SchemeGroupVersion.String(), resourceNames[k])
	if absent {
		log.Infof("the API server does not serve %s: no service ranges are known from it", qualifiedResource(k))
		src.lw = emptyListWatch()
	}
	state := newConnState(k)
	idx := newIndexes(k)
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: listerOf(state.instrument(src.lw), src.transform == nil && k != Pods),
		ObjectType:    src.example,
		Handler:       c.handler(k, idx),
		Transform:     src.transform,
	})
	if kind := wireKinds[k]; kind != "" && c.wire.known != nil {
		c.wire.known.set(kind, store)
	}
	return &informer{kind: k, store: store, idx: idx, controller: controller, state: state, absent: absent, known: c.wire.known}
}

// wireKinds are the protobuf kinds of the resources decoded on the wire,
// whose decoders reuse what the store holds (known.go).
var wireKinds = map[Resources]string{Services: "Service", EndpointSlices: "EndpointSlice", Pods: "Pod"}

// start runs the informer, and checkAccess beside it so that a missing
// permission is named at start-up rather than found in a retry loop.
func (inf *informer) start(checkAccess func(context.Context, *informer)) {
	ctx, cancel := context.WithCancel(context.Background())
	inf.cancel, inf.done = cancel, make(chan struct{})
	if inf.absent {
		checkAccess = func(context.Context, *informer) { inf.state.accessChecked() }
	}
	inf.state.recheck = func() { go checkAccess(ctx, inf) }
	informerStarted(inf.kind)
	go func() {
		defer close(inf.done)
		inf.controller.RunWithContext(ctx)
	}()
	go inf.reportSync(ctx)
	go checkAccess(ctx, inf)
}

// synced tells whether the first list completed, a watch has been
// established since, and no permission is missing: a server that may list
// but not watch would serve a snapshot that never changes, and one missing
// a permission must keep its readiness probe failed so a rollout stops.
func (inf *informer) synced() bool {
	return inf.controller.HasSynced() && inf.state.healthy()
}

// stop ends the watch and waits for the informer's goroutine, so a reload
// leaves nothing running behind.
func (inf *informer) stop() {
	inf.cancel()
	<-inf.done
	if inf.known != nil {
		inf.known.drop(wireKinds[inf.kind], inf.store)
	}
	informerGone(inf.kind)
}

// liveInformers counts the running informers per resource, across caches
// (a reload with a changed connection starts the new cache's informer
// before the old one stops). The per-resource gauges belong to them
// together: they are removed when the last one stops, so that a resource
// no longer watched leaves no stale permission_denied or api_reachable
// behind to keep an alert firing.
var liveInformers = struct {
	sync.Mutex
	n map[Resources]int
}{n: map[Resources]int{}}

func informerStarted(k Resources) {
	liveInformers.Lock()
	defer liveInformers.Unlock()
	liveInformers.n[k]++
	informers.WithLabelValues(resourceNames[k]).Set(float64(liveInformers.n[k]))
}

func informerGone(k Resources) {
	liveInformers.Lock()
	defer liveInformers.Unlock()
	liveInformers.n[k]--
	name := resourceNames[k]
	informers.WithLabelValues(name).Set(float64(liveInformers.n[k]))
	if liveInformers.n[k] > 0 {
		return
	}
	delete(liveInformers.n, k)
	syncedGauge.DeleteLabelValues(name)
	apiReachable.DeleteLabelValues(name)
	for _, verb := range neededVerbs {
		permissionDenied.DeleteLabelValues(name, verb)
	}
}

// reportSync logs and exports the moment the first list completes.
func (inf *informer) reportSync(ctx context.Context) {
	start := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), inf.controller.HasSynced) {
		return
	}
	syncedGauge.WithLabelValues(resourceNames[inf.kind]).Set(1)
	log.Infof("%s synced: %d objects in %s", resourceNames[inf.kind], len(inf.store.ListKeys()), time.Since(start).Round(time.Millisecond))
}

// syncTick paces WaitForSync's polling: the server answers when the
// cache has synced, so every millisecond of the tick is start-up time
// (half a tick on average), while a poll costs a few atomic loads.
func (c *Cache) syncTick() <-chan time.Time { return time.After(syncPollInterval) }

// syncPollInterval is how often a wait for the sync looks.
const syncPollInterval = 5 * time.Millisecond

// connState follows whether list and watch calls reach the API server, so
// an outage and the recovery are each logged once, and exported.
type connState struct {
	kind Resources
	mu   sync.Mutex
	down bool
	err  error
	// probeDown is set while down is the probe's finding (probe.go),
	// which only a probe or a call that reaches the API server clears.
	probeDown bool
	// refusal says why the API server refuses our calls (401, 404, ...)
	// while it does; "" otherwise. A 403 is tracked in denied instead.
	refusal string
	// watched is set by the first successful watch.
	watched bool
	// denied are the verbs the API server refuses until a call of that
	// verb succeeds or a check allows it, logged those whose denial was
	// logged; checked is set when the start-up permission check is over,
	// checking while a check runs; recheck starts one.
	denied, logged    map[string]bool
	checked, checking bool
	recheck           func()
	// plainLists counts the successful LISTs, whole or the last page of
	// one (listerWatcher).
	plainLists int
}

func newConnState(k Resources) *connState {
	apiReachable.WithLabelValues(resourceNames[k]).Set(1)
	for _, verb := range neededVerbs {
		permissionDenied.WithLabelValues(resourceNames[k], verb).Set(0)
	}
	return &connState{kind: k, denied: map[string]bool{}, logged: map[string]bool{}, checking: true}
}

// healthy tells whether a watch is established, the permission check is
// over and no verb is refused.
func (s *connState) healthy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watched && s.checked && len(s.denied) == 0
}

// instrument wraps lw so each call reports its outcome. A successful list
// after the first one is a relist: after a watch gap (410 Gone) or an
// outage. The reflector lists with a plain LIST or with a watch that
// streams the initial list (listerWatcher); both count.
func (s *connState) instrument(lw *cache.ListWatch) *cache.ListWatch {
	lists := 0
	listed := func(rv string) {
		lists++
		if lists > 1 {
			relists.WithLabelValues(resourceNames[s.kind]).Inc()
			log.Infof("%s relisted at resource version %q", resourceNames[s.kind], rv)
		}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := lw.ListWithContext(ctx, o)
			// A paged list (paged) is listed once its last page is in: a
			// relist is a relist, not as many as it has pages.
			if err == nil && lastPage(obj) {
				listed(listRV(obj))
				s.mu.Lock()
				s.plainLists++
				s.mu.Unlock()
			}
			s.report("list", err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := lw.WatchWithContext(ctx, o)
			if err == nil && isEmptyWatch(w) {
				// Reported as the failure it is; client-go gets the empty
				// watch back and tries again, as with any ended watch.
				s.report("watch", errEmptyWatch)
				return w, nil
			}
			if err == nil && o.SendInitialEvents != nil && *o.SendInitialEvents {
				listed(o.ResourceVersion)
			}
			s.report("watch", err)
			return w, err
		},
	}
}

// listerWatcher is how client-go's reflector lists: with a plain LIST when
// plain, which the API server answers from its watch cache in one
// response, else with a watch that streams every object as an event
// (WatchListClient, on by default since client-go 0.35), which costs the
// API server more CPU per object but never holds a whole list.
//
// Services and EndpointSlices, which their client decodes straight into
// the cached form (wireDecoder; no transform), are listed plain, in pages
// (paged): a page of their LIST costs this process no more memory than the
// stream, and the API server less CPU. Measured at
// bench's S2 (10,000 headless services, 100,000 endpoints): start to first
// complete answer alone 0.47–0.66 s streamed, 0.34–0.43 s listed; started
// at the same moment as stock against one API server 0.90–1.69 s,
// 0.59–0.77 s; peak RSS 138 MiB, 133 MiB. Pods are decoded on the wire
// too, but streamed: a pod's protobuf is kilobytes (its spec and container
// statuses), so a LIST of the thresholds' 150,000 is a response of
// hundreds of megabytes held whole while it is read, where the stream
// holds one event at a time (S3's 20,000 pods, then decoded through the
// generated type: peak RSS 143 → 258 MiB when listed).
type listerWatcher struct {
	*cache.ListWatch
	plain bool
}

// listPageSize is the objects a page of a plain LIST holds: at S5's
// EndpointSlices (17 endpoints each on average) about 1.5 MB of protobuf.
const listPageSize = 500

// listerOf is how the reflector lists lw: plain, in pages, or streamed.
func listerOf(lw *cache.ListWatch, plain bool) listerWatcher {
	if plain {
		lw = paged(lw)
	}
	return listerWatcher{ListWatch: lw, plain: plain}
}

// paged turns the reflector's relists, at the last resourceVersion it
// saw, which the API server answers from its watch cache in one response
// whatever the limit, into consistent reads (no older than it) of
// listPageSize objects a page, which it answers in pages (from its cache's
// snapshot since Kubernetes 1.34, else from etcd): a relist then holds one
// page of the response at a time besides the cache it still has. At the
// thresholds (S5: 10,600 EndpointSlices, 180,000 endpoints) the response
// held whole was some 40 MiB of heap on a 67 MiB steady one during a forced
// relist (relist peak 1.37 x steady RSS; paged, 1.23 x). The first list,
// at resourceVersion "0", stays whole: nothing else is held then, and it
// is the faster start (S5: 0.9 s to the first complete answer, against 1.07
// s paged). A relist whose continue token has expired (it took longer
// than the API server keeps one) is listed again whole, as client-go's
// pager does.
func paged(lw *cache.ListWatch) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			switch {
			case o.Continue != "": // the next page of a list
				if o.Limit == 0 {
					o.Limit = listPageSize
				}
			case o.ResourceVersion != "0": // a relist
				o.ResourceVersion, o.ResourceVersionMatch, o.Limit = "", "", listPageSize
			}
			return lw.ListWithContext(ctx, o)
		},
		WatchFuncWithContext: lw.WatchWithContext,
		DisableChunking:      lw.DisableChunking,
	}
}

// IsWatchListSemanticsUnSupported is what the reflector asks
// (watchlist.DoesClientNotSupportWatchListSemantics).
func (l listerWatcher) IsWatchListSemanticsUnSupported() bool { return l.plain }

// errEmptyWatch stands for the error client-go swallows when a watch
// request keeps failing with a dropped connection or a timeout (EOF, reset,
// as through a proxy or load balancer whose backend is down): after its
// retries it returns an empty watch and no error. Without this the outage
// would show neither in api_reachable nor in errors_total; the soak's
// API server outage behind a TCP proxy found it.
var errEmptyWatch = errors.New("watch: the API server was not reached (connection closed or timed out on every retry)")

// emptyWatchType is the type of watch.NewEmptyWatch's result, which is
// unexported.
var emptyWatchType = reflect.TypeOf(watch.NewEmptyWatch())

func isEmptyWatch(w watch.Interface) bool { return reflect.TypeOf(w) == emptyWatchType }

// lastPage tells whether a LIST response is a whole list or the last page
// of one: it has no continue token.
func lastPage(obj runtime.Object) bool {
	l, ok := obj.(metav1.ListInterface)
	return !ok || l.GetContinue() == ""
}

func listRV(obj runtime.Object) string {
	if l, ok := obj.(metav1.ListInterface); ok {
		return l.GetResourceVersion()
	}
	return "?"
}

// report records the outcome of a call of verb; state changes are logged.
// A refusal (403) is not an outage: the server was reached, and the log
// says which permission is missing.
func (s *connState) report(verb string, err error) {
	if err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || isContextDone(err)) {
		return // a watch gap or our own shutdown, not an outage
	}
	switch {
	case apierrors.IsForbidden(err):
		s.deny([]string{verb}, err.Error(), false)
	case err == nil:
		s.allow(verb)
		if s.recheckDue() {
			s.recheck()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && verb == "watch" {
		s.watched = true
	}
	name := resourceNames[s.kind]
	if err != nil {
		s.err = err
		watchErrors.WithLabelValues(name).Inc()
	} else {
		s.err = nil
	}
	s.setReachable(err == nil || answered(err), err)
	s.probeDown = s.probeDown && s.down
	s.setRefusal(refusalOf(err), err)
}

// answered tells whether err is the API server's own reply (a status),
// as opposed to the server not being reached at all.
func answered(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// refusalOf names what an answered error means for the operator; "" for
// success, for 403 (reported by deny) and for what is not a refusal.
func refusalOf(err error) string {
	switch {
	case err == nil, apierrors.IsForbidden(err), !answered(err):
		return ""
	case apierrors.IsUnauthorized(err):
		return "the API server rejects this server's credentials (401 Unauthorized): the kubeconfig's token or certificate is wrong or expired"
	case apierrors.IsNotFound(err):
		return "the API server does not serve this resource (404 Not Found): is its CustomResourceDefinition installed?"
	default:
		return "the API server answers with an error"
	}
}

// setReachable logs and exports a change of reachability, once.
func (s *connState) setReachable(ok bool, err error) {
	name := resourceNames[s.kind]
	switch {
	case !ok && !s.down:
		s.down = true
		apiReachable.WithLabelValues(name).Set(0)
		log.Warningf("%s: API server unreachable, serving the last known state: %v", name, err)
	case ok && s.down:
		s.down = false
		apiReachable.WithLabelValues(name).Set(1)
		log.Infof("%s: API server reachable again", name)
	}
}

// setRefusal logs a refusal once when it starts (or changes), and its end.
// A 403 neither starts nor ends one: deny reports it.
func (s *connState) setRefusal(refusal string, err error) {
	if apierrors.IsForbidden(err) || refusal == s.refusal {
		return
	}
	name := resourceNames[s.kind]
	if refusal != "" {
		log.Errorf("%s: %s: %v", name, refusal, err)
	} else {
		log.Infof("%s: the API server accepts this server's calls again", name)
	}
	s.refusal = refusal
}

func (s *connState) lastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// isContextDone tells whether err is our own cancellation; client-go wraps
// it (in a *url.Error, say), so it is unwrapped.
func isContextDone(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
