package watchcache

import (
	"reflect"
	"time"
)

// sameFacts tells whether obj, an update of old, carries the same facts:
// everything the transform kept (what DNS reads) but the resource version
// and the change time, which every write moves. Such an update (an
// annotation, a status condition DNS ignores, managedFields, a resync)
// changes no answer, so it is published to no consumer: no rebuild, no
// snapshot, no SOA serial bump, no programming-latency sample.
func sameFacts(old, obj any) bool {
	switch o := old.(type) {
	case *Service:
		n, ok := obj.(*Service)
		return ok && equalBut(o, n, func(s *Service) { s.resourceVersion, s.Changed = "", time.Time{} })
	case *EndpointSlice:
		n, ok := obj.(*EndpointSlice)
		return ok && equalBut(o, n, func(s *EndpointSlice) { s.resourceVersion, s.Changed = "", time.Time{} })
	case *ServiceImport:
		n, ok := obj.(*ServiceImport)
		return ok && equalBut(o, n, func(s *ServiceImport) { s.resourceVersion, s.Changed = "", time.Time{} })
	case *Pod:
		n, ok := obj.(*Pod)
		return ok && equalBut(o, n, func(p *Pod) { p.resourceVersion = "" })
	case *Namespace:
		n, ok := obj.(*Namespace)
		return ok && equalBut(o, n, func(ns *Namespace) { ns.resourceVersion = "" })
	case *ServiceCIDR:
		n, ok := obj.(*ServiceCIDR)
		return ok && equalBut(o, n, func(sc *ServiceCIDR) { sc.resourceVersion = "" })
	}
	return false
}

// equalBut compares copies of a and b with what clear zeroes left out.
// Cached objects are immutable: the copies share their slices, read only.
func equalBut[T any](a, b *T, clear func(*T)) bool {
	x, y := *a, *b
	clear(&x)
	clear(&y)
	return reflect.DeepEqual(x, y)
}
