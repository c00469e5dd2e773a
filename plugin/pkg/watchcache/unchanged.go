package watchcache

import (
	"reflect"
	"slices"
	"time"
)

// sameFacts tells whether obj, an update of old, carries the same facts:
// everything the conversion kept (what DNS reads) but the resource version
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
		return ok && sameSliceFacts(o, n)
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

// sameSliceFacts is equalBut for EndpointSlices, the updates that come by
// the thousand, without reflection, which cost as much as decoding one.
// It compares every field but the resource version and the change time
// (TestSameSliceFactsKnowsEveryField fails when a field is added), and
// takes an empty list for an absent one: DNS serves them the same.
func sameSliceFacts(a, b *EndpointSlice) bool {
	return a.namespace == b.namespace && a.name == b.name &&
		a.Service == b.Service && a.MultiClusterService == b.MultiClusterService && a.SourceCluster == b.SourceCluster &&
		slices.Equal(a.Ports, b.Ports) && slices.Equal(a.zones, b.zones) &&
		slices.EqualFunc(a.Endpoints, b.Endpoints, sameEndpoint)
}

func sameEndpoint(x, y Endpoint) bool {
	return x.Hostname == y.Hostname && x.PodName == y.PodName && x.Ready == y.Ready && x.Terminating == y.Terminating &&
		x.zone == y.zone && slices.Equal(x.Addresses, y.Addresses)
}
