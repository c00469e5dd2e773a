package main

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

	"github.com/schemadns/schemadns/test/dnsload"
	"github.com/schemadns/schemadns/test/kubeapi"
)

// Address plan: loaded endpoints, endpoints written later and clusterset
// IPs each have their own range, so an answer's origin shows at a glance.
var (
	endpointBase = netip.MustParseAddr("10.64.0.0")  // endpoints as loaded
	churnBase    = netip.MustParseAddr("10.128.0.0") // endpoints written by the soak
	importIPBase = netip.MustParseAddr("10.200.0.0") // ServiceImport IPs
)

const (
	managedBy     = "soak.schemadns.io"
	servicesPerNS = 100
	basePort      = 80
)

// fixture is the loaded data: headless services with one EndpointSlice of
// cfg.endpoints endpoints each (StatefulSet-style hostnames), ClusterIP
// services with a slice as well, and ClusterSetIP ServiceImports for
// multicluster. Every service is tracked: the scenarios rewrite them and
// check the answers.
type fixture struct {
	cfg      *config
	cs       kubernetes.Interface // protobuf: cheaper for the API server than JSON
	dyn      dynamic.Interface
	services []*tracked // headless first, then ClusterIP
}

// protobufConfig is rc with protobuf bodies and no client-side throttling:
// callers set their own parallelism.
func protobufConfig(rc *rest.Config) *rest.Config {
	pc := rest.CopyConfig(rc)
	pc.ContentType = "application/vnd.kubernetes.protobuf"
	pc.QPS, pc.Burst = -1, 0
	return pc
}

func newFixture(cfg *config, c *kubeapi.Cluster) (*fixture, error) {
	cs, err := kubernetes.NewForConfig(protobufConfig(c.RESTConfig()))
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	f := &fixture{cfg: cfg, cs: cs, dyn: c.Dynamic()}
	n := cfg.headless + cfg.clusterIP
	for i := range n {
		f.services = append(f.services, newTracked(i, i < cfg.headless, cfg.endpoints))
	}
	return f, nil
}

func namespace(i int) string { return fmt.Sprintf("soak-%03d", i/servicesPerNS) }

// nth is base + n.
func nth(base netip.Addr, n uint32) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// load creates the namespaces, the services with their slices, then the
// imports.
func (f *fixture) load(ctx context.Context) error {
	nss := (len(f.services) + servicesPerNS - 1) / servicesPerNS
	steps := []struct {
		what string
		n    int
		job  func(context.Context, int) error
	}{
		{"namespaces", nss, func(ctx context.Context, i int) error { return f.createNamespace(ctx, namespace(i*servicesPerNS)) }},
		{"services with EndpointSlices", len(f.services), func(ctx context.Context, i int) error { return f.createService(ctx, f.services[i]) }},
		{"ServiceImports", f.cfg.imports, f.createImport},
	}
	for _, s := range steps {
		start := time.Now()
		if err := f.parallel(ctx, s.n, s.job); err != nil {
			return fmt.Errorf("load %s: %w", s.what, err)
		}
		logf("loaded %d %s in %s", s.n, s.what, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// parallel runs job for every i in [0, n) on cfg.Loaders workers, retrying
// each a few times, and returns the first error.
func (f *fixture) parallel(ctx context.Context, n int, job func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range f.cfg.Loaders {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := retry(ctx, func() error { return job(ctx, i) }); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// retry runs fn up to five times, a second apart: a loaded API server
// times out now and then.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for range 5 {
		if err = fn(); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Second)
	}
	return err
}

func (f *fixture) createNamespace(ctx context.Context, ns string) error {
	_, err := f.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createService creates t's Service and its slice, and keeps the Service
// as the API server returned it: a later update must carry its cluster IPs.
func (f *fixture) createService(ctx context.Context, t *tracked) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.ns, Name: t.name},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: basePort}},
		},
	}
	if t.headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	svcs := f.cs.CoreV1().Services(t.ns)
	got, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // a retried create that had succeeded
		got, err = svcs.Get(ctx, t.name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	t.svc = got
	_, err = f.cs.DiscoveryV1().EndpointSlices(t.ns).Create(ctx, t.slice(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createImport creates ClusterSetIP ServiceImport m, in the namespace of
// the m-th service.
func (f *fixture) createImport(ctx context.Context, m int) error {
	ns, name := namespace(m%len(f.services)), fmt.Sprintf("imp-%05d", m)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"type":  "ClusterSetIP",
			"ips":   []any{nth(importIPBase, uint32(m)).String()},
			"ports": []any{map[string]any{"name": "http", "protocol": "TCP", "port": int64(basePort)}},
		},
	}}
	_, err := f.dyn.Resource(kubeapi.ServiceImports).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// importName is the clusterset.local name of import m.
func importName(m, services int) string {
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
