// Package watchcachetest is the in-memory stand-in for the shared cache
// that tests of the plugins' pure answer logic read. Whole-server tests
// (test/) use the real cache and API server instead.
package watchcachetest

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
	"k8s.io/apimachinery/pkg/runtime"
)

// Source holds converted objects and answers the reads the plugins make of
// a watchcache.Handle, by scanning: for small fixtures only.
type Source struct {
	services     []*watchcache.Service
	slices       []*watchcache.EndpointSlice
	pods         []*watchcache.Pod
	namespaces   []*watchcache.Namespace
	imports      []*watchcache.ServiceImport
	serviceCIDRs []*watchcache.ServiceCIDR
}

// Add converts API objects as the informers do and stores them, each
// replacing the object of its kind with the same key.
func (s *Source) Add(t testing.TB, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		c, err := watchcache.Convert(o)
		if err != nil {
			t.Fatal(err)
		}
		switch v := c.(type) {
		case *watchcache.Service:
			s.services = append(without(s.services, v.Key()), v)
		case *watchcache.EndpointSlice:
			s.slices = append(without(s.slices, v.Key()), v)
		case *watchcache.Pod:
			s.pods = append(without(s.pods, v.Key()), v)
		case *watchcache.Namespace:
			s.namespaces = append(without(s.namespaces, v.Key()), v)
		case *watchcache.ServiceImport:
			s.imports = append(without(s.imports, v.Key()), v)
		case *watchcache.ServiceCIDR:
			s.serviceCIDRs = append(without(s.serviceCIDRs, v.Key()), v)
		default:
			t.Fatalf("watchcachetest: cannot hold %T", c)
		}
	}
}

// Remove deletes every object with key ("<ns>/<name>"), of any kind.
func (s *Source) Remove(key string) {
	s.services, s.slices, s.pods = without(s.services, key), without(s.slices, key), without(s.pods, key)
	s.namespaces, s.imports, s.serviceCIDRs = without(s.namespaces, key), without(s.imports, key), without(s.serviceCIDRs, key)
}

func without[T interface{ Key() string }](objs []T, key string) []T {
	return slices.DeleteFunc(slices.Clone(objs), func(o T) bool { return o.Key() == key })
}

func find[T interface{ Key() string }](objs []T, key string) T {
	var zero T
	for _, o := range objs {
		if o.Key() == key {
			return o
		}
	}
	return zero
}

// Services are every service.
func (s *Source) Services() []*watchcache.Service { return s.services }

// Service is the service ns/name, or nil.
func (s *Source) Service(ns, name string) *watchcache.Service { return find(s.services, ns+"/"+name) }

// EndpointSlices are every slice.
func (s *Source) EndpointSlices() []*watchcache.EndpointSlice { return s.slices }

// SlicesForService are the slices labelled for the service ns/name.
func (s *Source) SlicesForService(ns, name string) []*watchcache.EndpointSlice {
	return s.slicesWhere(func(e *watchcache.EndpointSlice) bool { return e.Namespace() == ns && e.Service == name })
}

// SlicesForImport are the slices labelled for the import ns/name.
func (s *Source) SlicesForImport(ns, name string) []*watchcache.EndpointSlice {
	return s.slicesWhere(func(e *watchcache.EndpointSlice) bool { return e.Namespace() == ns && e.MultiClusterService == name })
}

func (s *Source) slicesWhere(keep func(*watchcache.EndpointSlice) bool) []*watchcache.EndpointSlice {
	var out []*watchcache.EndpointSlice
	for _, e := range s.slices {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Namespace is the namespace name, or nil.
func (s *Source) Namespace(name string) *watchcache.Namespace {
	for _, n := range s.namespaces {
		if n.Name() == name {
			return n
		}
	}
	return nil
}

// PodsByIP are the pods with address a.
func (s *Source) PodsByIP(a netip.Addr) []*watchcache.Pod {
	var out []*watchcache.Pod
	for _, p := range s.pods {
		if slices.Contains(p.IPs, a) {
			out = append(out, p)
		}
	}
	return out
}

// ServiceImports are every import.
func (s *Source) ServiceImports() []*watchcache.ServiceImport { return s.imports }

// ServiceImport is the import ns/name, or nil.
func (s *Source) ServiceImport(ns, name string) *watchcache.ServiceImport {
	return find(s.imports, ns+"/"+name)
}

// ServiceCIDRs are every service range.
func (s *Source) ServiceCIDRs() []*watchcache.ServiceCIDR { return s.serviceCIDRs }
