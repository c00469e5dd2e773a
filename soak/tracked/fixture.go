package tracked

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/kubeapi"
	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/soak/observe"
)

// Address plan: loaded endpoints, endpoints written later and clusterset
// IPs each have their own range, so an answer's origin shows at a glance.
var (
	endpointBase = netip.MustParseAddr("10.64.0.0")  // endpoints as loaded
	churnBase    = netip.MustParseAddr("10.128.0.0") // endpoints written by the soak
	ImportIPBase = netip.MustParseAddr("10.200.0.0") // ServiceImport IPs
)

// ServicesPerNS is how many services each namespace holds.
const ServicesPerNS = 100

const (
	managedBy = "soak.schemadns.io"
	basePort  = 80
)

// Shape is what the fixture holds, and how it is loaded.
type Shape struct {
	Headless, ClusterIP int // services of each kind
	Endpoints           int // endpoints of each service's one slice
	Imports             int // ClusterSetIP ServiceImports
	Loaders             int // parallel API requests of the loader
}

// Fixture is the loaded data: headless services with one EndpointSlice of
// shape.Endpoints endpoints each (StatefulSet-style hostnames), ClusterIP
// services with a slice as well, and ClusterSetIP ServiceImports for
// multicluster. Every service is tracked: the scenarios rewrite them and
// check the answers.
type Fixture struct {
	shape    Shape
	cs       kubernetes.Interface // protobuf: cheaper for the API server than JSON
	dyn      dynamic.Interface
	Services []*Service // headless first, then ClusterIP
}

// protobufConfig is rc with protobuf bodies and no client-side throttling:
// callers set their own parallelism.
func protobufConfig(rc *rest.Config) *rest.Config {
	pc := rest.CopyConfig(rc)
	pc.ContentType = "application/vnd.kubernetes.protobuf"
	pc.QPS, pc.Burst = -1, 0
	return pc
}

// NewFixture makes the services of shape, to be loaded into c.
func NewFixture(shape Shape, c *kubeapi.Cluster) (*Fixture, error) {
	cs, err := kubernetes.NewForConfig(protobufConfig(c.RESTConfig()))
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	f := &Fixture{shape: shape, cs: cs, dyn: c.Dynamic()}
	n := shape.Headless + shape.ClusterIP
	for i := range n {
		f.Services = append(f.Services, newService(i, i < shape.Headless, shape.Endpoints))
	}
	return f, nil
}

func namespace(i int) string { return fmt.Sprintf("soak-%03d", i/ServicesPerNS) }

// Load creates the namespaces, the services with their slices, then the
// imports.
func (f *Fixture) Load(ctx context.Context) error {
	nss := (len(f.Services) + ServicesPerNS - 1) / ServicesPerNS
	steps := []struct {
		what string
		n    int
		job  func(context.Context, int) error
	}{
		{"namespaces", nss, func(ctx context.Context, i int) error { return f.createNamespace(ctx, namespace(i*ServicesPerNS)) }},
		{"services with EndpointSlices", len(f.Services), func(ctx context.Context, i int) error { return f.createService(ctx, f.Services[i]) }},
		{"ServiceImports", f.shape.Imports, f.createImport},
	}
	for _, s := range steps {
		start := time.Now()
		if err := f.parallel(ctx, s.n, s.job); err != nil {
			return fmt.Errorf("load %s: %w", s.what, err)
		}
		toolflags.Logf("loaded %d %s in %s", s.n, s.what, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// parallel runs job for every i in [0, n) on shape.Loaders workers, retrying
// each a few times, and returns the first error.
func (f *Fixture) parallel(ctx context.Context, n int, job func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range f.shape.Loaders {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := Retry(ctx, func() error { return job(ctx, i) }); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// Retry runs fn up to five times, a second apart: a loaded API server
// times out now and then.
func Retry(ctx context.Context, fn func() error) error {
	var err error
	for range 5 {
		if err = fn(); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Second)
	}
	return err
}

func (f *Fixture) createNamespace(ctx context.Context, ns string) error {
	_, err := f.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createService creates t's Service and its slice, and keeps the Service
// as the API server returned it: a later update must carry its cluster IPs.
func (f *Fixture) createService(ctx context.Context, t *Service) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.NS, Name: t.Name},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: basePort}},
		},
	}
	if t.Headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	svcs := f.cs.CoreV1().Services(t.NS)
	got, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // a retried create that had succeeded
		got, err = svcs.Get(ctx, t.Name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	t.Svc = got
	_, err = f.cs.DiscoveryV1().EndpointSlices(t.NS).Create(ctx, t.slice(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createImport creates ClusterSetIP ServiceImport m, in the namespace of
// the m-th service.
func (f *Fixture) createImport(ctx context.Context, m int) error {
	ns, name := namespace(m%len(f.Services)), fmt.Sprintf("imp-%05d", m)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"type":  "ClusterSetIP",
			"ips":   []any{observe.Nth(ImportIPBase, uint32(m)).String()},
			"ports": []any{map[string]any{"name": "http", "protocol": "TCP", "port": int64(basePort)}},
		},
	}}
	_, err := f.dyn.Resource(kubeapi.ServiceImports).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// ImportName is the clusterset.local name of import m.
func ImportName(m, services int) string {
	return fmt.Sprintf("imp-%05d.%s.svc.clusterset.local.", m, namespace(m%services))
}

// endpointSlice is a slice of ready IPv4 endpoints on the services' port.
func endpointSlice(ns, name, svc string, addrs []uint32, hosts []string) *discoveryv1.EndpointSlice {
	ready := true
	pname, proto, port := "http", corev1.ProtocolTCP, int32(basePort)
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: managedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &pname, Protocol: &proto, Port: &port}},
	}
	for j, a := range addrs {
		e := discoveryv1.Endpoint{Addresses: []string{dnsload.NumAddr(a)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
		if hosts != nil {
			e.Hostname = &hosts[j]
		}
		sl.Endpoints = append(sl.Endpoints, e)
	}
	return sl
}
