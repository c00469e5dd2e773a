package watchcache

import (
	"time"

	"k8s.io/client-go/tools/cache"
)

// Event says that the DNS data of one service (or import, pod, namespace)
// may have changed.
type Event struct {
	// Resource is the one resource the changed object is of.
	Resource Resources
	// Namespace is the changed object's namespace; for a Namespace, its
	// own name.
	Namespace string
	// Service is the Service the change belongs to: a Service's own name, an
	// EndpointSlice's service-name label ("" without one); "" for the
	// other resources.
	Service string
	// Import is the ServiceImport the change belongs to: an import's own
	// name, an EndpointSlice's MCS service-name label; "" otherwise.
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
func (c *Cache) handler(k Resources, idx *indexes) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			idx.update(nil, obj)
			c.notify(k, obj)
		},
		UpdateFunc: func(old, obj any) {
			// The index holds the stored object itself: keep it current
			// even when nothing DNS reads changed.
			idx.update(old, obj)
			if sameFacts(old, obj) {
				skipped.WithLabelValues(resourceNames[k]).Inc()
				return
			}
			// A slice moved to another service changes both.
			if o, n := eventFor(k, old), eventFor(k, obj); o.Service != n.Service || o.Import != n.Import {
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

func (c *Cache) notify(k Resources, obj any) {
	ev := eventFor(k, obj)
	if ev.Resource == 0 {
		log.Warningf("unexpected %T in the %s informer, ignored", obj, resourceNames[k])
		return
	}
	events.WithLabelValues(resourceNames[k]).Inc()
	if ev.Changed.IsZero() {
		ev.Changed = time.Now()
	}
	c.publish(ev)
}

func eventFor(k Resources, obj any) Event {
	switch o := obj.(type) {
	case *Service:
		return Event{Resource: k, Namespace: o.namespace, Service: o.name, Changed: o.Changed}
	case *EndpointSlice:
		return Event{Resource: k, Namespace: o.namespace, Service: o.Service, Import: o.MultiClusterService, Changed: o.Changed}
	case *ServiceImport:
		return Event{Resource: k, Namespace: o.namespace, Import: o.name, Changed: o.Changed}
	case *Pod:
		return Event{Resource: k, Namespace: o.namespace}
	case *Namespace:
		return Event{Resource: k, Namespace: o.name}
	case *ServiceCIDR:
		return Event{Resource: k}
	}
	return Event{}
}
