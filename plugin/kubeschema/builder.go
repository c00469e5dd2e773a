package kubeschema

import (
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
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
}

func newBuilder(k *Kubeschema, h source) *builder {
	return &builder{k: k, cache: h, dirty: map[string]watchcache.Event{}, dirtyNamespaces: map[string]bool{}}
}

// Mark records a cache event (watchcache.Builder): quick, never blocks.
func (b *builder) Mark(ev watchcache.Event) bool {
	b.mu.Lock()
	switch ev.Kind {
	case watchcache.Services, watchcache.EndpointSlices:
		if ev.Name == "" {
			b.mu.Unlock()
			return false // a slice without a service-name label belongs to no service
		}
		key := ev.Namespace + "/" + ev.Name
		if old, ok := b.dirty[key]; !ok || ev.Changed.Before(old.Changed) {
			b.dirty[key] = ev // keep the oldest change: latency is measured from it
		}
	case watchcache.Namespaces:
		if b.k.opts.namespaceLabels == nil {
			b.mu.Unlock()
			return false
		}
		b.dirtyNamespaces[ev.Namespace] = true
	default:
		b.mu.Unlock()
		return false
	}
	b.mu.Unlock()
	return true
}

// Publish builds the first snapshot from the synced cache
// (watchcache.Builder); what was marked before is covered by it.
func (b *builder) Publish() {
	b.takeDirty()
	b.k.snap.Store(b.fullBuild())
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
	e := newEdit(b.k.emptySnapshot(answer.NextSerial(0)), true)
	for _, svc := range b.cache.Services() {
		b.put(e, svc.Namespace(), svc.Name(), svc)
	}
	return e.s
}

// Apply rebuilds the dirty services into a new snapshot and publishes it.
func (b *builder) Apply() {
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
	e := newEdit(old.clone(answer.NextSerial(old.serial)), false)
	for _, ev := range dirty {
		e.remove(ev.Namespace, ev.Name)
		b.put(e, ev.Namespace, ev.Name, b.cache.Service(ev.Namespace, ev.Name))
	}
	b.k.snap.Store(e.s)
	for _, ev := range dirty {
		kind := watchcache.KindHeadlessWithoutSelector
		if svc := b.cache.Service(ev.Namespace, ev.Name); svc != nil {
			kind = svc.Kind
		}
		observeProgrammed(kind, ev)
	}
}

// put adds svc's records (if it is served) to every zone of e.
func (b *builder) put(e *edit, ns, name string, svc *watchcache.Service) {
	if svc == nil || !b.k.serves(b.cache, ns) {
		return
	}
	in := b.input(svc)
	ptrDone := false
	for zi, z := range e.s.zones {
		if z.reverse {
			continue
		}
		r := buildService(in, z.origin, b.k.opts.ttl, &b.k.opts)
		if r == nil {
			continue
		}
		e.namespace(zi, ns)[name] = r
		if !ptrDone {
			ptrDone = true
			for ip, p := range ptrRecords(ns+"/"+name, r, b.k.opts.ttl) {
				sh := e.ptrShard(ip)
				sh[ip] = append(sh[ip], p)
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

// clone is a new snapshot with serial that shares s's maps; change it
// through an edit, which copies what it changes.
func (s *snapshot) clone(serial uint32) *snapshot {
	n := &snapshot{ptr: s.ptr, serial: serial}
	for _, z := range s.zones {
		nz := *z
		nz.services = maps.Clone(z.services)
		nz.soa = answer.WithSerial(z.soa, serial)
		nz.negative = []dns.RR{nz.soa}
		n.zones = append(n.zones, &nz)
	}
	return n
}

// edit changes a snapshot that is not published yet, copying each inner
// map (one namespace of one zone, one PTR shard) before its first change:
// the maps are shared with the published snapshot, which queries read
// without a lock. A batch thus costs what it touches.
type edit struct {
	s *snapshot
	// all: every map of s is new (a full build), nothing to copy.
	all bool
	// copiedNS (by zone index) and copiedPTR are what this edit copied.
	copiedNS  []map[string]bool
	copiedPTR [ptrShards]bool
}

func newEdit(s *snapshot, all bool) *edit {
	e := &edit{s: s, all: all, copiedNS: make([]map[string]bool, len(s.zones))}
	for i := range e.copiedNS {
		e.copiedNS[i] = map[string]bool{}
	}
	return e
}

// namespace is the services map of namespace ns in zone zi, ready to
// change; created when the namespace has none.
func (e *edit) namespace(zi int, ns string) map[string]*serviceRecords {
	z := e.s.zones[zi]
	m := z.services[ns]
	if !e.all && !e.copiedNS[zi][ns] {
		e.copiedNS[zi][ns] = true
		m = maps.Clone(m)
	}
	if m == nil {
		m = map[string]*serviceRecords{}
	}
	z.services[ns] = m
	return m
}

// ptrShard is the PTR shard of ip, ready to change.
func (e *edit) ptrShard(ip netip.Addr) map[netip.Addr][]ptrRecord {
	i := ptrShard(ip)
	m := e.s.ptr[i]
	if !e.all && !e.copiedPTR[i] {
		e.copiedPTR[i] = true
		m = maps.Clone(m)
	}
	if m == nil {
		m = map[netip.Addr][]ptrRecord{}
	}
	e.s.ptr[i] = m
	return m
}

// remove drops the service ns/name from every zone and its PTR records,
// which are found from its records in the first zone that has it (every
// forward zone has the same addresses).
func (e *edit) remove(ns, name string) {
	var had *serviceRecords
	for zi, z := range e.s.zones {
		r := z.services[ns][name]
		if r == nil {
			continue
		}
		if had == nil {
			had = r
		}
		m := e.namespace(zi, ns)
		delete(m, name)
		if len(m) == 0 {
			delete(z.services, ns)
		}
	}
	if had == nil {
		return
	}
	key := ns + "/" + name
	forPTR(had, func(rr dns.RR) {
		ip := answer.AddrOf(rr)
		sh := e.ptrShard(ip)
		kept := slices.DeleteFunc(slices.Clone(sh[ip]), func(p ptrRecord) bool { return p.service == key })
		if len(kept) == 0 {
			delete(sh, ip)
		} else {
			sh[ip] = kept
		}
	})
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
