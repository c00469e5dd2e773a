package clustershape

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// kind is how a service is answered.
type kind uint8

const (
	clusterIP kind = iota
	headless
	externalName
)

// service is where one service sits and what it is made of.
type service struct {
	ns        int32
	kind      kind
	dual      bool
	large     bool
	ports     uint8
	endpoints int32
	// firstSlot is the pod slot, in its namespace, of endpoint 0: the
	// services of a namespace take its pods in turn, one pod per endpoint;
	// an endpoint whose slot is past the namespace's pods has none.
	firstSlot int32
	// unowned numbers, over the whole shape, this service's first
	// endpoint that no pod has.
	unowned int32
}

// Layout is a Shape with every object placed; it makes the objects.
type Layout struct {
	shape  Shape
	svcs   []service
	nsFrom []int // nsFrom[n] is the first service of namespace n; nsFrom[Namespaces] = len(svcs)
	counts Counts
}

// Counts are a layout's objects, by kind.
type Counts struct {
	Namespaces                                             int
	Services, ClusterIP, Headless, ExternalName, DualStack int
	// Large services have Shape.LargeEndpoints endpoints.
	Large int
	// Endpoints are the endpoints of every slice: a dual-stack service's
	// count twice, once per family.
	Endpoints, Slices int
	// Pods in all; PodsBacking are those some endpoint names.
	Pods, PodsBacking int
}

// Layout places every object of the shape.
func (s Shape) Layout() (*Layout, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("shape %s: %w", s.Name, err)
	}
	l := &Layout{shape: s, svcs: make([]service, s.Services)}
	r := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	l.placeNamespaces()
	l.pickKinds(r)
	l.placeEndpoints(r)
	return l, nil
}

// placeNamespaces puts MaxServicesPerNamespace services in the first
// namespace and spreads the rest evenly, in order of their numbers.
func (l *Layout) placeNamespaces() {
	s := l.shape
	l.nsFrom = make([]int, s.Namespaces+1)
	first := s.MaxServicesPerNamespace
	if s.Namespaces == 1 {
		first = s.Services
	}
	rest, others := s.Services-first, max(1, s.Namespaces-1)
	next := first
	for n := 1; n < s.Namespaces; n++ {
		l.nsFrom[n] = next
		next += rest / others
		if n-1 < rest%others {
			next++
		}
	}
	l.nsFrom[s.Namespaces] = s.Services
	for n := range s.Namespaces {
		for i := l.nsFrom[n]; i < l.nsFrom[n+1]; i++ {
			l.svcs[i].ns = int32(n)
		}
	}
}

// pickKinds chooses the exact number of services of each kind, at random
// places, and which are dual-stack and large.
func (l *Layout) pickKinds(r *rand.Rand) {
	s := l.shape
	order := r.Perm(s.Services)
	nExt, nHeadless := share(s.Services, s.ExternalName), share(s.Services, s.Headless)
	var answered []int // services that have endpoints
	for k, i := range order {
		switch {
		case k < nExt:
			l.svcs[i].kind = externalName
		case k < nExt+nHeadless:
			l.svcs[i].kind = headless
			answered = append(answered, i)
		default:
			answered = append(answered, i)
		}
	}
	sort.Ints(answered)
	pick := func(n int, set func(*service)) {
		for k, j := range r.Perm(len(answered)) {
			if k == n {
				return
			}
			set(&l.svcs[answered[j]])
		}
	}
	pick(share(s.Services, s.DualStack), func(v *service) { v.dual = true })
	pick(share(s.Services, s.Large), func(v *service) { v.large = true })
}

// placeEndpoints sizes every service and gives its endpoints pods.
func (l *Layout) placeEndpoints(r *rand.Rand) {
	s := l.shape
	c := &l.counts
	c.Namespaces, c.Services, c.Pods = s.Namespaces, s.Services, s.Namespaces*s.PodsPerNamespace
	slot, unowned := int32(0), int32(0)
	for i := range l.svcs {
		v := &l.svcs[i]
		if i == l.nsFrom[v.ns] {
			slot = 0
		}
		// Set for ExternalName services too: podOwner's search needs
		// firstSlot+endpoints to grow with the service's number.
		v.firstSlot, v.unowned = slot, unowned
		v.ports = 1
		if r.IntN(5) == 0 {
			v.ports = 2
		}
		switch {
		case v.kind == externalName:
			c.ExternalName++
			continue
		case v.large:
			v.endpoints = int32(s.LargeEndpoints)
			c.Large++
		default:
			v.endpoints = int32(s.MinEndpoints + r.IntN(s.MaxEndpoints-s.MinEndpoints+1))
		}
		if v.kind == headless {
			c.Headless++
		} else {
			c.ClusterIP++
		}
		families := 1
		if v.dual {
			families = 2
			c.DualStack++
		}
		c.Endpoints += families * int(v.endpoints)
		c.Slices += families * ((int(v.endpoints) + MaxEndpointsPerSlice - 1) / MaxEndpointsPerSlice)
		backed := min(v.endpoints, max(0, int32(s.PodsPerNamespace)-slot))
		c.PodsBacking += int(backed)
		unowned += v.endpoints - backed
		slot += v.endpoints
	}
}

// Shape is the shape laid out.
func (l *Layout) Shape() Shape { return l.shape }

// Counts are the layout's objects.
func (l *Layout) Counts() Counts { return l.counts }

// Describe is the shape in one line, for a report.
func (l *Layout) Describe() string {
	c, s := l.counts, l.shape
	return fmt.Sprintf("%s: %d services in %d namespaces (at most %d in one: %d ClusterIP, %d headless, %d ExternalName; %d of them dual-stack, %d with %d endpoints, the rest %d to %d), "+
		"%d endpoints in %d EndpointSlices, %d pods (%d a namespace, %d backing an endpoint, none scheduled)",
		s.Name, c.Services, c.Namespaces, s.MaxServicesPerNamespace, c.ClusterIP, c.Headless, c.ExternalName, c.DualStack,
		c.Large, s.LargeEndpoints, s.MinEndpoints, s.MaxEndpoints, c.Endpoints, c.Slices, c.Pods, s.PodsPerNamespace, c.PodsBacking)
}

// podOwner finds the service and endpoint that pod slot of namespace ns
// backs; ok is false for a pod no endpoint names.
func (l *Layout) podOwner(ns, slot int) (svc, endpoint int, ok bool) {
	from, to := l.nsFrom[ns], l.nsFrom[ns+1]
	k := sort.Search(to-from, func(k int) bool {
		v := l.svcs[from+k]
		return int(v.firstSlot+v.endpoints) > slot
	})
	if k == to-from {
		return 0, 0, false
	}
	v := l.svcs[from+k]
	if v.endpoints == 0 || int(v.firstSlot) > slot {
		return 0, 0, false
	}
	return from + k, slot - int(v.firstSlot), true
}
