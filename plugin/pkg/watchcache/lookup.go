package watchcache

import (
	"net/netip"
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
