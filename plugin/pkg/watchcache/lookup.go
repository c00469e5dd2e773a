package watchcache

import (
	"cmp"
	"net/netip"
	"slices"
)

// store returns the informer store of k, or nil when k is not watched.
func (c *Cache) store(k Resources) storeReader {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if inf, ok := c.informers[k]; ok {
		return inf.store
	}
	return nil
}

// storeReader is the read half of cache.Store.
type storeReader interface {
	GetByKey(key string) (any, bool, error)
	List() []any
}

// indexesOf returns the indexes of k's informer, or nil when k is not
// watched.
func (c *Cache) indexesOf(k Resources) *indexes {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if inf, ok := c.informers[k]; ok {
		return inf.idx
	}
	return nil
}

func get[T any](c *Cache, k Resources, key string) *T {
	st := c.store(k)
	if st == nil {
		return nil
	}
	obj, ok, _ := st.GetByKey(key)
	if !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

func list[T any](c *Cache, k Resources) []*T {
	st := c.store(k)
	if st == nil {
		return nil
	}
	return typed[T](st.List())
}

func typed[T any](objs []any) []*T {
	out := make([]*T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}

// Service returns the service ns/name, or nil.
func (c *Cache) Service(ns, name string) *Service { return get[Service](c, Services, ns+"/"+name) }

// Services returns every cached service.
func (c *Cache) Services() []*Service { return list[Service](c, Services) }

// SlicesForService returns the EndpointSlices of the service ns/name
// (read only).
func (c *Cache) SlicesForService(ns, name string) []*EndpointSlice {
	if x := c.indexesOf(EndpointSlices); x != nil {
		return x.slicesByService.get(nsName{ns, name})
	}
	return nil
}

// SlicesForImport returns the EndpointSlices of the ServiceImport ns/name
// (read only).
func (c *Cache) SlicesForImport(ns, name string) []*EndpointSlice {
	if x := c.indexesOf(EndpointSlices); x != nil {
		return x.slicesByImport.get(nsName{ns, name})
	}
	return nil
}

// EndpointSlices returns every cached EndpointSlice. There is no index of
// slices by address: at 100k endpoints it cost a third of the heap, for
// one consumer (multicluster) that keeps the few facts it needs itself.
func (c *Cache) EndpointSlices() []*EndpointSlice { return list[EndpointSlice](c, EndpointSlices) }

// PodsByIP returns the pods with the address a (read only).
func (c *Cache) PodsByIP(a netip.Addr) []*Pod {
	if x := c.indexesOf(Pods); x != nil {
		return x.podsByIP.get(a)
	}
	return nil
}

// Namespace returns the namespace name, or nil.
func (c *Cache) Namespace(name string) *Namespace { return get[Namespace](c, Namespaces, name) }

// Namespaces returns every cached namespace.
func (c *Cache) Namespaces() []*Namespace { return list[Namespace](c, Namespaces) }

// ServiceImport returns the import ns/name, or nil.
func (c *Cache) ServiceImport(ns, name string) *ServiceImport {
	return get[ServiceImport](c, ServiceImports, ns+"/"+name)
}

// ServiceImports returns every cached import.
func (c *Cache) ServiceImports() []*ServiceImport { return list[ServiceImport](c, ServiceImports) }

// ServiceCIDRs returns every cached service range.
func (c *Cache) ServiceCIDRs() []*ServiceCIDR { return list[ServiceCIDR](c, ServiceCIDRs) }

// Pods returns every cached pod.
func (c *Cache) Pods() []*Pod { return list[Pod](c, Pods) }

// EndpointAddr is one served address of a service, after merging slices.
type EndpointAddr struct {
	Addr     netip.Addr
	Hostname string
	PodName  string
	// Cluster is the source cluster (MCS slices only).
	Cluster string
	// Slice is the name of the slice the address came from.
	Slice string
	// Zone is the endpoint's topology zone ("" when the slice gives none).
	Zone string
}

// ServedEndpoints merges the slices of one service into the addresses DNS
// serves: an endpoint is served when it is ready (or publishNotReady is
// set) and not terminating. An address that appears more than once (two
// slices during a migration, or two clusters claiming it) is served once,
// from the first slice in (cluster, slice name) order; dup, when not nil,
// is called for each duplicate dropped. The result is sorted by address.
func ServedEndpoints(slices_ []*EndpointSlice, publishNotReady bool, dup func(kept, dropped EndpointAddr)) []EndpointAddr {
	ordered := slices_
	if len(slices_) > 1 {
		ordered = slices.Clone(slices_)
		slices.SortFunc(ordered, func(a, b *EndpointSlice) int {
			return cmp.Or(cmp.Compare(a.SourceCluster, b.SourceCluster), cmp.Compare(a.name, b.name))
		})
	}
	n := 0
	for _, s := range ordered {
		n += len(s.Endpoints)
	}
	out := make([]EndpointAddr, 0, n)
	for _, s := range ordered {
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if e.Terminating || !(e.Ready || publishNotReady) {
				continue
			}
			for _, a := range e.Addresses {
				out = append(out, EndpointAddr{Addr: a, Hostname: e.Hostname, PodName: e.PodName, Cluster: s.SourceCluster, Slice: s.name, Zone: s.Zone(e)})
			}
		}
	}
	// Sorted by address, stably: of equal addresses the first is the one
	// in (cluster, slice name) order, which is kept. A sort, where a map
	// of the addresses seen cost more than the rest of the merge.
	slices.SortStableFunc(out, func(a, b EndpointAddr) int { return a.Addr.Compare(b.Addr) })
	kept := 0
	for i := range out {
		if i > 0 && out[i].Addr == out[kept-1].Addr {
			if dup != nil {
				dup(out[kept-1], out[i])
			}
			continue
		}
		out[kept] = out[i]
		kept++
	}
	if kept == 0 {
		return nil
	}
	return out[:kept]
}
