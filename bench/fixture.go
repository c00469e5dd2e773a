package main

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
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

	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/test/kubeapi"
)

// Address plan of the fixture: every kind of address has its own range, so
// a PTR or an answer can be told apart at a glance.
var (
	endpointBase = netip.MustParseAddr("10.64.0.0")  // service endpoints and pods (a /10)
	churnBase    = netip.MustParseAddr("10.128.0.0") // endpoints written by the churn (a /10)
	bigBase      = netip.MustParseAddr("10.192.0.0") // the large headless services
	importIPBase = netip.MustParseAddr("10.200.0.0") // clusterset IPs of ServiceImports
	importEPBase = netip.MustParseAddr("10.210.0.0") // endpoints of headless imports
	latencyBase  = netip.MustParseAddr("10.250.0.0") // endpoints added by the latency runs
)

// MCS labels (sigs.k8s.io/mcs-api), spelled out to keep the module's
// requirements to client-go.
const (
	mcsServiceName   = "multicluster.kubernetes.io/service-name"
	mcsSourceCluster = "multicluster.kubernetes.io/source-cluster"
	managedBy        = "bench.schemadns.io"
)

// importEndpoints is how many endpoints a headless import has in each of
// its two member clusters.
const importEndpoints = 5

// fixture is the data of one shape, loaded into its own API server, and the
// names the queries use. Services, pods and imports are numbered.
type fixture struct {
	cfg   *config
	shape shape
	cs    kubernetes.Interface
	dyn   dynamic.Interface

	mu         sync.Mutex               // guards what the parallel loader fills in
	clusterIPs map[int]querymix.Service // by service number: ClusterIP services
	headless   map[int]querymix.Service // by service number: headless services
	imports    map[int]querymix.Service // by import number; ip empty for headless imports
	big        []querymix.Service       // the large headless services, by size
}

func newFixture(cfg *config, sh shape, c *kubeapi.Cluster) (*fixture, error) {
	rc := c.RESTConfig()
	rc.QPS = -1 // no client-side throttling: the loader sets its own parallelism
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	cs, err := writerClient(c)
	if err != nil {
		return nil, err
	}
	return &fixture{cfg: cfg, shape: sh, cs: cs, dyn: dyn, clusterIPs: map[int]querymix.Service{},
		headless: map[int]querymix.Service{}, imports: map[int]querymix.Service{}}, nil
}

// writerClient is a client of c's admin that writes in protobuf with no
// client-side throttling: the loader and the churn set their own
// parallelism.
func writerClient(c *kubeapi.Cluster) (kubernetes.Interface, error) {
	rc := c.RESTConfig()
	rc.QPS = -1
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	return kubernetes.NewForConfig(rc)
}

// namespace is where service i lives.
func (f *fixture) namespace(i int) string {
	if f.shape.PerNamespace == 0 {
		return "bench-all"
	}
	return fmt.Sprintf("bench-%03d", i/f.shape.PerNamespace)
}

// isHeadless tells whether service i is headless: the headless services are
// spread evenly over the numbering (every tenth in S3, every eleventh is
// ClusterIP in S2).
func (f *fixture) isHeadless(i int) bool {
	n, h := f.shape.services(), f.shape.Headless
	return (i+1)*h/n > i*h/n
}

func (f *fixture) serviceName(i int) string {
	if f.isHeadless(i) {
		return fmt.Sprintf("hl-%05d", i)
	}
	return fmt.Sprintf("svc-%05d", i)
}

// endpointAddr is the address of endpoint e (service e/endpoints); pod e
// has the same address.
func endpointAddr(e int) string { return nth(endpointBase, e) }

// nth is base + n.
func nth(base netip.Addr, n int) string {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}

// load creates the shape: namespaces, services with their EndpointSlices,
// the large headless services, pods and ServiceImports, in that order, so
// the objects numbered last are created last.
func (f *fixture) load(ctx context.Context) error {
	sh := f.shape
	var nss []string
	step := sh.PerNamespace
	if step == 0 {
		step = sh.services()
	}
	for i := 0; i < sh.services(); i += step {
		nss = append(nss, f.namespace(i))
	}
	if len(sh.BigHeadless) > 0 {
		nss = append(nss, "bench-big")
	}
	steps := []struct {
		what string
		n    int
		job  func(context.Context, int) error
	}{
		{"namespaces", len(nss), func(ctx context.Context, i int) error { return f.createNamespace(ctx, nss[i]) }},
		{"services with EndpointSlices", sh.services(), f.loadService},
		{"large headless services", len(sh.BigHeadless), f.loadBig},
		{"pods", sh.Pods, f.loadPod},
		{"ServiceImports", sh.Imports, f.loadImport},
	}
	for _, s := range steps {
		start := time.Now()
		if err := f.parallel(ctx, s.what, 0, s.n, s.job); err != nil {
			return fmt.Errorf("load %s: %w", s.what, err)
		}
		if s.n > 0 {
			logf("loaded %d %s in %s", s.n, s.what, time.Since(start).Round(time.Millisecond))
		}
	}
	for _, size := range sh.BigHeadless {
		f.big = append(f.big, querymix.Service{Name: bigName(size), NS: "bench-big"})
	}
	return nil
}

// bigName is the name of the large headless service of size n.
func bigName(n int) string { return fmt.Sprintf("headless-%d", n) }

// loadBig creates the k-th large headless service; their addresses follow
// one another from bigBase.
func (f *fixture) loadBig(ctx context.Context, k int) error {
	size, first := f.shape.BigHeadless[k], 0
	for _, s := range f.shape.BigHeadless[:k] {
		first += s
	}
	name := bigName(size)
	if _, err := f.createService(ctx, "bench-big", name, true); err != nil {
		return err
	}
	addrs := make([]string, size)
	for j := range addrs {
		addrs[j] = nth(bigBase, first+j)
	}
	return f.createSlices(ctx, "bench-big", name, addrs, nil, false)
}

// parallel runs job for every i in [from, to) on cfg.Loaders workers and
// returns the first error.
func (f *fixture) parallel(ctx context.Context, what string, from, to int, job func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for range f.cfg.Loaders {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := retry(ctx, func() error { return job(ctx, i) }); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	stopProgress := progress(what, to-from, &done)
	wg.Wait()
	stopProgress()
	return context.Cause(ctx)
}

// progress logs every 10 seconds how far a long load is.
func progress(what string, total int, done *atomic.Int64) func() {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				logf("  %s: %d/%d", what, done.Load(), total)
			}
		}
	}()
	return func() { close(stop) }
}

// retry runs op up to 5 times while it fails with an error the API server
// may give under load.
func retry(ctx context.Context, op func() error) error {
	var err error
	for attempt := range 5 {
		if err = op(); err == nil || !retriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return err
}

func retriable(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err)
}

func (f *fixture) createNamespace(ctx context.Context, name string) error {
	_, err := f.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// loadService creates service i and its EndpointSlice.
func (f *fixture) loadService(ctx context.Context, i int) error {
	ns, name, headless := f.namespace(i), f.serviceName(i), f.isHeadless(i)
	ip, err := f.createService(ctx, ns, name, headless)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if headless {
		f.headless[i] = querymix.Service{Name: name, NS: ns}
	} else {
		f.clusterIPs[i] = querymix.Service{Name: name, NS: ns, IP: ip}
	}
	f.mu.Unlock()
	addrs := make([]string, f.shape.Endpoints)
	var hosts []string
	for j := range addrs {
		addrs[j] = endpointAddr(i*f.shape.Endpoints + j)
		if headless { // StatefulSet-style hostnames
			hosts = append(hosts, fmt.Sprintf("%s-%d", name, j))
		}
	}
	return f.createSlices(ctx, ns, name, addrs, hosts, false)
}

// servicePorts are the ports of every service: both named, so both have SRV
// records in either plugin.
var servicePorts = []corev1.ServicePort{
	{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80},
	{Name: "grpc", Protocol: corev1.ProtocolTCP, Port: 9090},
}

// createService creates a ClusterIP or headless service and returns its
// cluster IP ("None" when headless).
func (f *fixture) createService(ctx context.Context, ns, name string, headless bool) (string, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: servicePorts, Selector: map[string]string{"app": name}},
	}
	if headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	got, err := f.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // a retried create that had succeeded
		got, err = f.cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return "", err
	}
	return got.Spec.ClusterIP, nil
}

// maxSliceEndpoints is what the EndpointSlice controller puts in one slice.
const maxSliceEndpoints = 100

// createSlices creates the EndpointSlices of a service (or, with mcs, of
// an import, for one member cluster), at most 100 endpoints each, as the
// EndpointSlice controller would.
func (f *fixture) createSlices(ctx context.Context, ns, svc string, addrs, hosts []string, mcs bool, cluster ...string) error {
	for part := 0; part*maxSliceEndpoints < len(addrs); part++ {
		lo, hi := part*maxSliceEndpoints, min((part+1)*maxSliceEndpoints, len(addrs))
		sl := endpointSlice(ns, fmt.Sprintf("%s-%d", svc, part), addrs[lo:hi], sliceHosts(hosts, lo, hi))
		sl.Labels = map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: managedBy}
		if mcs {
			sl.Name = fmt.Sprintf("%s-%s-%d", svc, cluster[0], part)
			sl.Labels = map[string]string{mcsServiceName: svc, mcsSourceCluster: cluster[0], discoveryv1.LabelManagedBy: managedBy}
		}
		_, err := f.cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func sliceHosts(hosts []string, lo, hi int) []string {
	if hosts == nil {
		return nil
	}
	return hosts[lo:hi]
}

// endpointSlice is a slice of ready IPv4 endpoints on the services' ports.
func endpointSlice(ns, name string, addrs, hosts []string) *discoveryv1.EndpointSlice {
	ready := true
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, p := range servicePorts {
		sl.Ports = append(sl.Ports, discoveryv1.EndpointPort{Name: &p.Name, Protocol: &p.Protocol, Port: &p.Port})
	}
	for j, a := range addrs {
		e := discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
		if hosts != nil {
			e.Hostname = &hosts[j]
		}
		sl.Endpoints = append(sl.Endpoints, e)
	}
	return sl
}

// loadPod creates pod k, which backs endpoint k: in its service's
// namespace, with its address. Nothing schedules pods here, so the status
// (its IP, Running) is written by hand.
func (f *fixture) loadPod(ctx context.Context, k int) error {
	ns := f.namespace(k / f.shape.Endpoints)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%05d", k)},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	pods := f.cs.CoreV1().Pods(ns)
	got, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	ip := endpointAddr(k)
	got.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	_, err = pods.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}

// podName is the DNS name of pod k under pods verified.
func (f *fixture) podName(k int) string {
	return fmt.Sprintf("%s.%s.pod.cluster.local.", dashed(endpointAddr(k)), f.namespace(k/f.shape.Endpoints))
}

// loadImport creates ServiceImport m (in the namespace of the m-th of
// Imports evenly spaced services): ClusterSetIP, or every fifth one Headless with endpoints
// in two member clusters.
func (f *fixture) loadImport(ctx context.Context, m int) error {
	ns, name := f.namespace(m*f.shape.services()/f.shape.Imports), fmt.Sprintf("imp-%05d", m)
	headless := m%5 == 4
	spec := map[string]any{
		"type":  "ClusterSetIP",
		"ports": []any{map[string]any{"name": "http", "protocol": "TCP", "port": int64(80)}},
	}
	ip := nth(importIPBase, m)
	if headless {
		spec["type"], ip = "Headless", ""
	} else {
		spec["ips"] = []any{ip}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	_, err := f.dyn.Resource(kubeapi.ServiceImports).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if headless {
		for c, cluster := range []string{"cluster-a", "cluster-b"} {
			addrs := make([]string, importEndpoints)
			hosts := make([]string, importEndpoints)
			for j := range addrs {
				addrs[j] = nth(importEPBase, (m*2+c)*importEndpoints+j)
				hosts[j] = fmt.Sprintf("%s-%d", name, j)
			}
			if err := f.createSlices(ctx, ns, name, addrs, hosts, true, cluster); err != nil {
				return err
			}
		}
	}
	f.mu.Lock()
	f.imports[m] = querymix.Service{Name: name, NS: ns, IP: ip}
	f.mu.Unlock()
	return nil
}

// dashed is an IPv4 address as a pod name label: 10-64-0-1.
func dashed(ip string) string { return strings.ReplaceAll(ip, ".", "-") }

// multiclusterMix is the clusterset.local mix on the fixture's
// ServiceImports.
func (f *fixture) multiclusterMix() []querymix.Share {
	return querymix.Multicluster(querymix.Sorted(f.imports))
}

// clusterMix is the query mix of a real cluster, for cluster.local, on
// the fixture's services.
func (f *fixture) clusterMix() []querymix.Share {
	cips := querymix.Sorted(f.clusterIPs)
	return querymix.Cluster(cips, cips, querymix.Sorted(f.headless))
}
