package watchcache

import (
	"time"

	"k8s.io/client-go/tools/cache"
)

// Event says that the DNS data of one service (or import, pod, namespace)
// may have changed.
type Event struct {
	Kind Kind
	// Namespace and Name of the Service the change belongs to; for an
	// EndpointSlice that is its service-name label, for a Pod or Namespace
	// the object itself.
	Namespace, Name string
	// Import is the ServiceImport an EndpointSlice belongs to (MCS label).
	Import string
	// Changed is when the change happened in the API (see changeTime), or
	// when the watch delivered it if the API does not say precisely.
	Changed time.Time
}

// Subscribe registers fn to be called for every change, from the informers'
// goroutines; fn must be quick (mark something dirty, never block). The
// returned function unsubscribes.
func (c *Cache) Subscribe(fn func(Event)) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextSub
	c.nextSub++
	c.subs[id] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.subs, id)
	}
}

func (c *Cache) publish(ev Event) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, fn := range c.subs {
		fn(ev)
	}
}

// handler keeps the informer's indexes and turns its notifications into
// Events. The indexes change before the event goes out, so a consumer
// that reads them on an event finds the change.
func (c *Cache) handler(k Kind, idx *indexes) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			idx.update(nil, obj)
			c.notify(k, obj)
		},
		UpdateFunc: func(old, obj any) {
			idx.update(old, obj)
			// A slice moved to another service changes both.
			if o, n := eventFor(k, old), eventFor(k, obj); o.Name != n.Name || o.Import != n.Import {
				c.notify(k, old)
			}
			c.notify(k, obj)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			idx.update(obj, nil)
			c.notify(k, obj)
		},
	}
}

func (c *Cache) notify(k Kind, obj any) {
	ev := eventFor(k, obj)
	if ev.Kind == 0 {
		log.Warningf("unexpected %T in the %s informer, ignored", obj, resourceNames[k])
		return
	}
	events.WithLabelValues(resourceNames[k]).Inc()
	if ev.Changed.IsZero() {
		ev.Changed = time.Now()
	}
	c.publish(ev)
}

func eventFor(k Kind, obj any) Event {
	switch o := obj.(type) {
	case *Service:
		return Event{Kind: k, Namespace: o.namespace, Name: o.name, Changed: o.Changed}
	case *EndpointSlice:
		return Event{Kind: k, Namespace: o.namespace, Name: o.Service, Import: o.MultiClusterService, Changed: o.Changed}
	case *ServiceImport:
		return Event{Kind: k, Namespace: o.namespace, Name: o.name, Import: o.name, Changed: o.Changed}
	case *Pod:
		return Event{Kind: k, Namespace: o.namespace, Name: o.name}
	case *Namespace:
		return Event{Kind: k, Namespace: o.name, Name: o.name}
	case *ServiceCIDR:
		return Event{Kind: k, Name: o.name}
	}
	return Event{}
}
