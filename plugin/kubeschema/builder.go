package kubeschema

import (
	"context"
	"maps"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/answer"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
	"k8s.io/apimachinery/pkg/labels"
)

// source is what the builder and the query path read of the cache;
// *watchcache.Handle implements it.
type source interface {
	Services() []*watchcache.Service
	Service(ns, name string) *watchcache.Service
	SlicesForService(ns, name string) []*watchcache.EndpointSlice
	Namespace(name string) *watchcache.Namespace
	PodsByIP(a netip.Addr) []*watchcache.Pod
}

// builder turns cache events into new snapshots. Events only mark services
// dirty; one goroutine rebuilds what is dirty and publishes, so a burst of
// changes costs one swap, and the query path never waits.
type builder struct {
	k     *Kubeschema
	cache source

	mu    sync.Mutex
	dirty map[string]watchcache.Event // by "<ns>/<svc>"
	// dirtyNamespaces: a namespace's labels changed (namespace_labels).
	dirtyNamespaces map[string]bool
	wake            chan struct{}
	// unsynced takes this instance out of the synced gauge; set once the
	// first snapshot is published, called after run returns.
	unsynced func()
}

func newBuilder(k *Kubeschema, h source) *builder {
	return &builder{k: k, cache: h, dirty: map[string]watchcache.Event{}, dirtyNamespaces: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// onEvent is the cache subscription: quick, never blocks.
func (b *builder) onEvent(ev watchcache.Event) {
	b.mu.Lock()
	switch ev.Kind {
	case watchcache.Services, watchcache.EndpointSlices:
		if ev.Name == "" {
			b.mu.Unlock()
			return // a slice without a service-name label belongs to no service
		}
		key := ev.Namespace + "/" + ev.Name
		if old, ok := b.dirty[key]; !ok || ev.Changed.Before(old.Changed) {
			b.dirty[key] = ev // keep the oldest change: latency is measured from it
		}
	case watchcache.Namespaces:
		if b.k.opts.namespaceLabels == nil {
			b.mu.Unlock()
			return
		}
		b.dirtyNamespaces[ev.Namespace] = true
	default:
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run publishes the first snapshot once the cache has synced, then keeps
// it current until ctx ends.
func (b *builder) run(ctx context.Context, synced func(context.Context) error) {
	if err := synced(ctx); err != nil {
		return
	}
	b.takeDirty() // the full build covers everything seen so far
	b.k.snap.Store(b.fullBuild())
	b.unsynced = syncedInstances.Up()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
			b.apply()
		}
	}
}

func (b *builder) takeDirty() (map[string]watchcache.Event, map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, n := b.dirty, b.dirtyNamespaces
	b.dirty, b.dirtyNamespaces = map[string]watchcache.Event{}, map[string]bool{}
	return d, n
}

// fullBuild computes a snapshot from everything in the cache.
func (b *builder) fullBuild() *snapshot {
	s := b.k.emptySnapshot(answer.NextSerial(0))
	for _, svc := range b.cache.Services() {
		b.put(s, svc.Namespace(), svc.Name(), svc)
	}
	return s
}

// apply rebuilds the dirty services into a new snapshot and publishes it.
func (b *builder) apply() {
	dirty, namespaces := b.takeDirty()
	if len(namespaces) > 0 {
		for _, svc := range b.cache.Services() {
			if namespaces[svc.Namespace()] {
				key := svc.Namespace() + "/" + svc.Name()
				if _, ok := dirty[key]; !ok {
					dirty[key] = watchcache.Event{Kind: watchcache.Namespaces, Namespace: svc.Namespace(), Name: svc.Name(), Changed: time.Now()}
				}
			}
		}
	}
	if len(dirty) == 0 {
		return
	}
	old := b.k.snap.Load()
	next := old.clone(answer.NextSerial(old.serial))
	for key, ev := range dirty {
		next.remove(key)
		b.put(next, ev.Namespace, ev.Name, b.cache.Service(ev.Namespace, ev.Name))
	}
	b.k.snap.Store(next)
	for _, ev := range dirty {
		kind := watchcache.KindHeadlessWithoutSelector
		if svc := b.cache.Service(ev.Namespace, ev.Name); svc != nil {
			kind = svc.Kind
		}
		observeProgrammed(kind, ev)
	}
}

// put adds svc's records (if it is served) to every zone of s.
func (b *builder) put(s *snapshot, ns, name string, svc *watchcache.Service) {
	if svc == nil || !b.k.serves(b.cache, ns) {
		return
	}
	in := b.input(svc)
	key := ns + "/" + name
	ptrDone := false
	for _, z := range s.zones {
		if z.reverse {
			continue
		}
		r := buildService(in, z.origin, b.k.opts.ttl, &b.k.opts)
		if r == nil {
			continue
		}
		z.services[name+"."+ns] = r
		z.namespaces[ns]++
		if !ptrDone {
			ptrDone = true
			for ip, p := range ptrRecords(key, r, b.k.opts.ttl) {
				s.ptr[ip] = append(s.ptr[ip], p)
				s.ptrOwned[key] = append(s.ptrOwned[key], ip)
			}
		}
	}
}

// input gathers a service's served endpoints from its slices.
func (b *builder) input(svc *watchcache.Service) buildInput {
	in := buildInput{svc: svc}
	if svc.Kind == watchcache.KindExternalName || b.k.opts.noEndpoints {
		return in
	}
	if svc.Kind == watchcache.KindClusterIP && !b.k.opts.ignoreEmptyService {
		return in
	}
	slices := b.cache.SlicesForService(svc.Namespace(), svc.Name())
	in.endpoints = watchcache.ServedEndpoints(slices, svc.PublishNotReady, nil)
	in.slicePorts = map[string]int32{}
	for _, s := range slices {
		for _, p := range s.Ports {
			if _, ok := in.slicePorts[p.Name+"/"+p.Protocol]; !ok {
				in.slicePorts[p.Name+"/"+p.Protocol] = p.Port
			}
		}
	}
	return in
}

// clone copies the maps (not the records) so they can be changed.
func (s *snapshot) clone(serial uint32) *snapshot {
	n := &snapshot{ptr: maps.Clone(s.ptr), ptrOwned: maps.Clone(s.ptrOwned), serial: serial}
	for _, z := range s.zones {
		nz := *z
		nz.services, nz.namespaces = maps.Clone(z.services), maps.Clone(z.namespaces)
		nz.soa = answer.WithSerial(z.soa, serial)
		n.zones = append(n.zones, &nz)
	}
	return n
}

// remove drops a service ("<ns>/<svc>") from every zone and the PTR index.
func (s *snapshot) remove(key string) {
	ns, name, _ := strings.Cut(key, "/")
	for _, z := range s.zones {
		if _, ok := z.services[name+"."+ns]; !ok {
			continue
		}
		delete(z.services, name+"."+ns)
		if z.namespaces[ns]--; z.namespaces[ns] <= 0 {
			delete(z.namespaces, ns)
		}
	}
	for _, ip := range s.ptrOwned[key] {
		recs := s.ptr[ip]
		kept := make([]ptrRecord, 0, len(recs))
		for _, p := range recs {
			if p.service != key {
				kept = append(kept, p)
			}
		}
		if len(kept) == 0 {
			delete(s.ptr, ip)
		} else {
			s.ptr[ip] = kept
		}
	}
	delete(s.ptrOwned, key)
}

// serves tells whether services of namespace ns are visible: the
// namespaces option and the namespace_labels selector both filter.
func (k *Kubeschema) serves(c source, ns string) bool {
	if len(k.opts.namespaces) > 0 && !k.opts.namespaces[ns] {
		return false
	}
	if k.opts.namespaceLabels == nil {
		return true
	}
	n := c.Namespace(ns)
	return n != nil && k.opts.namespaceLabels.Matches(labels.Set(n.Labels))
}
