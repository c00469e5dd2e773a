// Package watchcache is the one watch-backed cache of Kubernetes objects
// that every schemadns plugin reads. It keeps one API connection and one
// informer per resource for each distinct Config, shared by reference count
// between plugin instances and server blocks, so that a CoreDNS reload (new
// instance acquires before the old one releases) neither drops the cache nor
// leaks watches.
//
// Objects are converted into small immutable structs before they are
// stored (objects.go). Consumers read through lookups backed by indexes and
// subscribe to change events (package changes turns them into snapshots).
package watchcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

var log = clog.NewWithPlugin("watchcache")

// Resources is a set of watched resources.
type Resources uint8

// The resources the cache can watch.
const (
	Services Resources = 1 << iota
	EndpointSlices
	Namespaces
	Pods
	ServiceImports
	// ServiceCIDRs (networking.k8s.io/v1): the cluster's service ranges.
	// Optional: an API server that does not serve them gives none.
	ServiceCIDRs
)

// allResources in a stable order, for loops and messages.
var allResources = []Resources{Services, EndpointSlices, Namespaces, Pods, ServiceImports, ServiceCIDRs}

// String names the resources in k, as the API does.
func (k Resources) String() string {
	var names []string
	for _, one := range allResources {
		if k&one != 0 {
			names = append(names, resourceNames[one])
		}
	}
	return strings.Join(names, ",")
}

var resourceNames = map[Resources]string{
	Services:       "services",
	EndpointSlices: "endpointslices",
	Namespaces:     "namespaces",
	Pods:           "pods",
	ServiceImports: "serviceimports",
	ServiceCIDRs:   "servicecidrs",
}

// registry holds the live caches. It is process-wide on purpose: sharing
// across server blocks and across a reload is its job. Every entry is
// reference-counted and removed when its last Handle is released.
var registry = struct {
	sync.Mutex
	caches map[string]*Cache
}{caches: map[string]*Cache{}}

// Cache is the shared state of one Config.
type Cache struct {
	cfg Config
	// rc and hc are the one connection every client of the cache uses
	// (core, the provided ServiceImport list-watch, and multicluster's
	// ClusterProperty watcher, through Connection): one HTTP/2 connection,
	// one rate limiter and one in-flight limit for the apiserver_*
	// options.
	rc   *rest.Config
	hc   *http.Client
	core kubernetes.Interface
	// wire reads Services and EndpointSlices straight into their cached
	// form (codec.go).
	wire wireClients
	// probe is the /readyz probe of the connection while any informer
	// runs (probe.go); guarded by registry's lock.
	probe      *connProbe
	probeEvery time.Duration

	// refs counts Handles; guarded by registry's lock.
	refs int

	mu        sync.RWMutex
	informers map[Resources]*informer
	subs      map[int]func(Event)
	nextSub   int
}

// Handle is one consumer's claim on a Cache and on the resources it asked
// for. Release it when the consumer shuts down.
type Handle struct {
	*Cache
	resources Resources
	released  sync.Once
}

// Connection is the cache's one API connection, for clients of a schema's
// own (multicluster's ClusterProperty watch) that must share its HTTP/2
// connection and its apiserver_* limits. Keep the handle while they run.
func (h *Handle) Connection() (*rest.Config, *http.Client) { return h.rc, h.hc }

// Acquire returns a Handle on the cache for cfg, creating it on first use,
// and makes sure the resources in resources are watched.
func Acquire(cfg Config, resources Resources) (*Handle, error) {
	h, _, _, err := AcquireSubscribed(cfg, resources, nil)
	return h, err
}

// AcquireSubscribed is Acquire with a subscriber (for changes.Consumer):
// subscribe (when not nil) is given the handle before any informer starts
// and returns the function to call for every change, so that it sees an
// event for every object the informers it starts list; fresh tells whether
// every resource of resources was started by this call. A cache another
// consumer started is not fresh. subscribe runs with the registry locked:
// it must not block.
func AcquireSubscribed(cfg Config, resources Resources, subscribe func(*Handle) func(Event)) (h *Handle, unsubscribe func(), fresh bool, err error) {
	registry.Lock()
	defer registry.Unlock()
	c, ok := registry.caches[cfg.key()]
	if !ok {
		if c, err = newCache(cfg); err != nil {
			return nil, nil, false, err
		}
		registry.caches[cfg.key()] = c
	}
	c.refs++
	h = &Handle{Cache: c, resources: resources}
	unsubscribe = func() {}
	if subscribe != nil {
		unsubscribe = c.Subscribe(subscribe(h))
	}
	started := c.startInformers(resources)
	return h, unsubscribe, started == resources, nil
}

// Release gives up the handle: informers nobody else needs stop, and the
// connection goes when its last handle does. Safe to call more than once.
func (h *Handle) Release() {
	h.released.Do(func() {
		registry.Lock()
		idle := h.dropInformers(h.resources)
		h.refs--
		if h.refs == 0 {
			delete(registry.caches, h.cfg.key())
		}
		probe := h.idleProbe()
		registry.Unlock()
		if probe != nil {
			probe.stop()
		}
		// Stopping waits for client-go's retry back-off when the API server
		// is down; other Acquire and Release calls need not wait with it.
		for _, inf := range idle {
			inf.stop()
		}
	})
}

func newCache(cfg Config) (*Cache, error) {
	rc, err := cfg.restConfig()
	if err != nil {
		return nil, err
	}
	// One limiter for every client: each client made from a config with
	// QPS and Burst would get a token bucket of its own.
	rc.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(rc.QPS, rc.Burst)
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("create HTTP client: %w", err)
	}
	core, err := kubernetes.NewForConfigAndClient(protobuf(rc), hc)
	if err != nil {
		return nil, fmt.Errorf("create API client: %w", err)
	}
	wire, err := newWireClients(rc, hc, cfg.EndpointPodNames)
	if err != nil {
		return nil, err
	}
	return &Cache{cfg: cfg, rc: rc, hc: hc, core: core, wire: wire, probeEvery: probeInterval, informers: map[Resources]*informer{}, subs: map[int]func(Event){}}, nil
}

// protobuf asks for the API's protobuf encoding, which built-in types
// support and which decodes several times faster than JSON. Custom
// resources (ServiceImport) only speak JSON, so their client keeps rc.
func protobuf(rc *rest.Config) *rest.Config {
	c := rest.CopyConfig(rc)
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.ContentType = "application/vnd.kubernetes.protobuf"
	return c
}

// startInformers starts what resources need and is not running yet, and counts
// one more user of each; it returns the resources it started. Called with
// registry's lock held.
func (c *Cache) startInformers(resources Resources) (started Resources) {
	for _, k := range allResources {
		if resources&k == 0 {
			continue
		}
		c.mu.Lock()
		inf, ok := c.informers[k]
		if !ok {
			inf = c.newInformer(k)
			c.informers[k] = inf
		}
		c.mu.Unlock()
		inf.refs++
		if !ok {
			inf.start(c.checkAccess)
			started |= k
		}
	}
	if started != 0 && c.probe == nil {
		c.probe = c.startProbe()
	}
	return started
}

// idleProbe takes the connection's probe when no informer is left, for the
// caller to stop once it has released registry's lock. Called with that
// lock held.
func (c *Cache) idleProbe() *connProbe {
	c.mu.RLock()
	idle := len(c.informers) == 0
	c.mu.RUnlock()
	if !idle || c.probe == nil {
		return nil
	}
	p := c.probe
	c.probe = nil
	return p
}

// dropInformers counts one user less of each kind and returns the
// informers nobody uses any more, for the caller to stop. Called with
// registry's lock held.
func (c *Cache) dropInformers(resources Resources) []*informer {
	var idle []*informer
	for _, k := range allResources {
		if resources&k == 0 {
			continue
		}
		c.mu.Lock()
		inf := c.informers[k]
		inf.refs--
		if inf.refs == 0 {
			delete(c.informers, k)
		}
		c.mu.Unlock()
		if inf.refs == 0 {
			idle = append(idle, inf)
		}
	}
	return idle
}

// HasSynced tells whether every resource in resources has been listed once
// and is being watched.
func (c *Cache) HasSynced(resources Resources) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, k := range allResources {
		if resources&k == 0 {
			continue
		}
		inf, ok := c.informers[k]
		if !ok || !inf.synced() {
			return false
		}
	}
	return true
}

// errNotSynced is returned by WaitForSync when ctx ends first.
var errNotSynced = errors.New("not synced")

// WaitForSync blocks until every resource in resources has synced or ctx ends;
// the error then names the resources that have not.
func (c *Cache) WaitForSync(ctx context.Context, resources Resources) error {
	for {
		if c.HasSynced(resources) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s (last error: %v)", errNotSynced, c.unsynced(resources), c.lastError(resources))
		case <-c.syncTick():
		}
	}
}

func (c *Cache) unsynced(resources Resources) Resources {
	var out Resources
	for _, k := range allResources {
		if resources&k != 0 && !c.HasSynced(k) {
			out |= k
		}
	}
	return out
}

// lastError is the most recent list or watch error of any kind in resources.
func (c *Cache) lastError(resources Resources) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, k := range allResources {
		if inf, ok := c.informers[k]; ok && resources&k != 0 {
			if err := inf.state.lastError(); err != nil {
				return err
			}
		}
	}
	return nil
}
