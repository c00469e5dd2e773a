package watchcache

import (
	"net/netip"
	"slices"
	"sync"
)

// nsName names a service or import by namespace and name, strings shared
// with the cached object that refers to it.
type nsName struct{ ns, name string }

// index finds cached objects by a key of theirs: slices by service or
// import, pods by address. client-go's indexer keeps a set of store keys
// per value, a map and a string an object: 300 bytes a pod or slice, a
// quarter of their cache. This one keeps the objects themselves, in a
// slice per key that is replaced, never changed, so readers may keep what
// get returns. The informer's event handler maintains it.
type index[K comparable, T any] struct {
	mu sync.RWMutex
	of map[K][]*T
	// keys calls fn with each key of an object; meta names the object.
	keys func(obj *T, fn func(K))
	meta func(obj *T) *objectMeta
}

func newIndex[K comparable, T any](keys func(*T, func(K)), meta func(*T) *objectMeta) *index[K, T] {
	return &index[K, T]{of: map[K][]*T{}, keys: keys, meta: meta}
}

// get returns the objects of key k (read only).
func (x *index[K, T]) get(k K) []*T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.of[k]
}

// update replaces old (when not nil) by obj (when not nil).
func (x *index[K, T]) update(old, obj *T) {
	if old == obj {
		return // a relist's unchanged object, the stored one itself (known.go)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old != nil && obj != nil && x.replace(old, obj) {
		return
	}
	if old != nil {
		x.remove(old)
	}
	if obj != nil {
		x.keys(obj, func(k K) { x.of[k] = append(slices.Clip(x.of[k]), obj) })
	}
}

// replace puts obj in old's place when both have one key, the same, and
// old is there: what nearly every update is (a slice of the same service,
// a pod with the same address), at the cost of one copy of that key's
// entries. It tells whether it did.
func (x *index[K, T]) replace(old, obj *T) bool {
	was, n := x.onlyKey(old)
	is, m := x.onlyKey(obj)
	if n != 1 || m != 1 || was != is {
		return false
	}
	entries := x.of[was]
	i := slices.Index(entries, old)
	if i < 0 {
		return false
	}
	entries = slices.Clone(entries)
	entries[i] = obj
	x.of[was] = entries
	return true
}

// onlyKey is obj's key and the number of keys it has.
func (x *index[K, T]) onlyKey(obj *T) (key K, n int) {
	x.keys(obj, func(k K) { key = k; n++ })
	return key, n
}

// remove drops the object named as obj is from the entries of obj's keys.
func (x *index[K, T]) remove(obj *T) {
	m := x.meta(obj)
	same := func(o *T) bool { om := x.meta(o); return om.name == m.name && om.namespace == m.namespace }
	x.keys(obj, func(k K) {
		if !slices.ContainsFunc(x.of[k], same) {
			return
		}
		kept := slices.DeleteFunc(slices.Clone(x.of[k]), same)
		if len(kept) == 0 {
			delete(x.of, k)
			return
		}
		x.of[k] = kept
	})
}

// indexes are an informer's indexes, by the resource it watches.
type indexes struct {
	slicesByService, slicesByImport *index[nsName, EndpointSlice]
	podsByIP                        *index[netip.Addr, Pod]
}

func newIndexes(k Resources) *indexes {
	x := &indexes{}
	sliceMeta := func(s *EndpointSlice) *objectMeta { return &s.objectMeta }
	switch k {
	case EndpointSlices:
		x.slicesByService = newIndex(func(s *EndpointSlice, fn func(nsName)) {
			if s.Service != "" {
				fn(nsName{s.namespace, s.Service})
			}
		}, sliceMeta)
		x.slicesByImport = newIndex(func(s *EndpointSlice, fn func(nsName)) {
			if s.MultiClusterService != "" {
				fn(nsName{s.namespace, s.MultiClusterService})
			}
		}, sliceMeta)
	case Pods:
		x.podsByIP = newIndex(func(p *Pod, fn func(netip.Addr)) {
			for _, a := range p.IPs {
				fn(a)
			}
		}, func(p *Pod) *objectMeta { return &p.objectMeta })
	}
	return x
}

// update replaces old by obj in the indexes of their kind; either may be
// nil (an add, a delete).
func (x *indexes) update(old, obj any) {
	switch o := obj.(type) {
	case *EndpointSlice:
		prev, _ := old.(*EndpointSlice)
		x.slicesByService.update(prev, o)
		x.slicesByImport.update(prev, o)
	case *Pod:
		prev, _ := old.(*Pod)
		x.podsByIP.update(prev, o)
	case nil:
		switch p := old.(type) {
		case *EndpointSlice:
			x.slicesByService.update(p, nil)
			x.slicesByImport.update(p, nil)
		case *Pod:
			x.podsByIP.update(p, nil)
		}
	}
}
