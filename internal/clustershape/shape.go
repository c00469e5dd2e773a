// Package clustershape is a cluster's services, EndpointSlices and pods as
// API objects, made the same way by every tool that needs them: S5, the
// Kubernetes scalability thresholds, and smaller copies of it.
//
// A Shape is counts and a seed. Its Layout places every object (which
// namespace, which kind of service, how many endpoints, which pod backs
// which endpoint) and makes each object on demand, by index, so that a
// loader with many writers never holds the 150,000 pods at once. The same
// Shape always gives the same objects:
//
//	l, err := clustershape.S5().Scaled(0.1).Layout()
//	stats, err := clustershape.Load(ctx, restConfig, l, clustershape.LoadOptions{
//		Progress: func(p clustershape.Progress) { log.Print(p) },
//	})
//
// The objects are data only: no pod is ever scheduled (its schedulerName
// is served by no scheduler), and every address is in 100.64.0.0/10 (RFC
// 6598's shared space) or fd00:100:64::/48, which route nowhere in a test
// cluster. Services have no selector, so the cluster's EndpointSlice
// controller leaves their slices, which Load writes, alone; with one it
// would rewrite them from pods it skips as unscheduled.
package clustershape

import (
	"errors"
	"fmt"
	"math"
)

// Shape is a cluster's size and mix. S5 gives the thresholds; change a
// field for another shape, and Validate says whether it can be laid out.
type Shape struct {
	// Name prefixes the namespaces (s5-00 …) and labels every object
	// (LabelShape), so one shape's objects can be found and removed.
	Name string
	// Seed fixes every choice: the same Shape gives the same objects.
	Seed uint64
	// Namespaces hold the services and the pods.
	Namespaces int
	// Services in all; MaxServicesPerNamespace of them in the first
	// namespace, the rest spread evenly over the others.
	Services, MaxServicesPerNamespace int
	// PodsPerNamespace pods in every namespace.
	PodsPerNamespace int
	// The mix, each a share of Services, rounded to a whole count:
	// headless services (ClusterIP None, their endpoints with hostnames),
	// ExternalName services (no endpoints), dual-stack services
	// (PreferDualStack, a slice per family) and large ones
	// (LargeEndpoints endpoints). Dual-stack and large services are
	// ClusterIP or headless ones.
	Headless, ExternalName, DualStack, Large float64
	// Endpoints of a service that is not large: from MinEndpoints to
	// MaxEndpoints, evenly.
	MinEndpoints, MaxEndpoints, LargeEndpoints int
	// ProxyName, if set, is every service's
	// service.kubernetes.io/service-proxy-name label: kube-proxy then
	// programs none of them (the addresses route nowhere anyway), while
	// DNS servers, which ignore the label, serve them all.
	ProxyName string
	// SchedulerName is every pod's spec.schedulerName: no scheduler
	// serves it, so no pod is bound to a node or reaches a kubelet.
	SchedulerName string
}

// Kubernetes' scalability thresholds (sig-scalability's "thresholds"
// document) that S5 sits at.
const (
	ThresholdServices             = 10000
	ThresholdServicesPerNamespace = 5000
	ThresholdPodsPerNamespace     = 3000
)

// MaxEndpointsPerSlice is the EndpointSlice controller's default
// (--max-endpoints-per-slice): a larger service gets several slices.
const MaxEndpointsPerSlice = 100

// S5 is the threshold shape: 10,000 services in 50 namespaces, 5,000 of
// them in one; 150,000 pods, 3,000 in each namespace; most services with
// 10 to 20 endpoints, 1% with 250.
func S5() Shape {
	return Shape{
		Name:                    "s5",
		Seed:                    5,
		Namespaces:              50,
		Services:                ThresholdServices,
		MaxServicesPerNamespace: ThresholdServicesPerNamespace,
		PodsPerNamespace:        ThresholdPodsPerNamespace,
		Headless:                0.10,
		ExternalName:            0.01,
		DualStack:               0.05,
		Large:                   0.01,
		MinEndpoints:            10,
		MaxEndpoints:            20,
		LargeEndpoints:          250,
		SchedulerName:           "clustershape-unscheduled",
	}
}

// S1 is bench's ClusterIP-heavy shape: 10,000 services in 100 namespaces
// of 100, a tenth of them headless, 10 endpoints each, no pods.
func S1() Shape {
	return Shape{
		Name:                    "s1",
		Seed:                    1,
		Namespaces:              100,
		Services:                10000,
		MaxServicesPerNamespace: 100,
		Headless:                0.10,
		MinEndpoints:            10,
		MaxEndpoints:            10,
		SchedulerName:           "clustershape-unscheduled",
	}
}

// Scaled is the shape with its services and pods multiplied by f (0.1 is
// a tenth of S5, for a quick run); namespaces, the mix and the endpoints
// per service stay.
func (s Shape) Scaled(f float64) Shape {
	if f == 1 {
		return s
	}
	scale := func(n int) int { return max(1, int(math.Round(float64(n)*f))) }
	s.Services = scale(s.Services)
	s.MaxServicesPerNamespace = scale(s.MaxServicesPerNamespace)
	s.PodsPerNamespace = scale(s.PodsPerNamespace)
	return s
}

// Address room: pod addresses and the addresses of endpoints that no pod
// has are numbered from the start of their own ranges (layout.go).
const maxAddresses = 1 << 20

// Validate tells whether the shape can be laid out.
func (s Shape) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(s.Name != "", "no name")
	check(s.Namespaces >= 1 && s.Namespaces <= 100, "namespaces %d: want 1 to 100", s.Namespaces)
	check(s.Services >= 1, "services %d: want at least 1", s.Services)
	check(s.MaxServicesPerNamespace >= 1 && s.MaxServicesPerNamespace <= s.Services,
		"max services per namespace %d: want 1 to %d", s.MaxServicesPerNamespace, s.Services)
	if s.Namespaces == 1 {
		check(s.MaxServicesPerNamespace == s.Services, "one namespace must hold all %d services", s.Services)
	} else if rest := s.Services - s.MaxServicesPerNamespace; rest > 0 {
		per := (rest + s.Namespaces - 2) / (s.Namespaces - 1)
		check(per <= s.MaxServicesPerNamespace, "%d services left over %d namespaces is more than %d in one",
			rest, s.Namespaces-1, s.MaxServicesPerNamespace)
	}
	check(s.PodsPerNamespace >= 0, "pods per namespace %d", s.PodsPerNamespace)
	check(s.Namespaces*s.PodsPerNamespace <= maxAddresses, "%d pods: at most %d", s.Namespaces*s.PodsPerNamespace, maxAddresses)
	for _, f := range []struct {
		name string
		v    float64
	}{{"headless", s.Headless}, {"external name", s.ExternalName}, {"dual-stack", s.DualStack}, {"large", s.Large}} {
		check(f.v >= 0 && f.v <= 1, "%s share %g: want 0 to 1", f.name, f.v)
	}
	check(s.Headless+s.ExternalName <= 1, "headless and ExternalName shares add up to more than 1")
	check(s.DualStack+s.ExternalName <= 1 && s.Large+s.ExternalName <= 1,
		"dual-stack and large services must fit among those that are not ExternalName")
	check(s.MinEndpoints >= 0 && s.MinEndpoints <= s.MaxEndpoints, "endpoints %d to %d", s.MinEndpoints, s.MaxEndpoints)
	check(s.LargeEndpoints >= 0, "large endpoints %d", s.LargeEndpoints)
	check(s.SchedulerName != "", "no scheduler name: the pods would be scheduled")
	return errors.Join(errs...)
}

// share is a fraction of n as a whole count.
func share(n int, f float64) int { return int(math.Round(float64(n) * f)) }
