package watchcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/schemadns/schemadns/test/kubeapi"
)

func TestMain(m *testing.M) {
	// multicluster chooses the ServiceImport version in the binary; here
	// the cache reads the one the tests write.
	Provide(ServiceImports, func(rc *rest.Config, hc *http.Client) (*cache.ListWatch, error) {
		mcs, err := mcsclient.NewForConfigAndClient(rc, hc)
		if err != nil {
			return nil, err
		}
		return cache.NewFilteredListWatchFromClient(mcs.MulticlusterV1alpha1().RESTClient(), "serviceimports", metav1.NamespaceAll, func(*metav1.ListOptions) {}), nil
	})
	kubeapi.ForTest(m, kubeapi.Options{ClusterProperties: true, APIServerFlags: []string{
		// Objects written before 1.36 may carry non-canonical addresses
		// ("10.1.0.010"); turning strict validation off lets the test
		// create one and show that the cache skips it.
		"--feature-gates=StrictIPCIDRValidation=false",
	}})
}

// Timeouts. Polls have deadlines; nothing sleeps to assert.
const (
	// settle bounds how long the cache may take to see a change.
	settle = 30 * time.Second
	// recovery bounds reconnecting after an outage: client-go's reflector
	// backs off up to 30 s (plus jitter) between attempts.
	recovery = 2 * time.Minute
)

// env is one test's namespace on the shared cluster, and a Config for it.
type env struct {
	t    *testing.T
	ctx  context.Context
	cl   *kubeapi.Cluster
	kube kubernetes.Interface
	ns   string
	cfg  Config
}

// newEnv creates a namespace named after prefix; tests share the cluster
// (and, through the registry, the cache) so each works in its own.
func newEnv(t *testing.T, prefix string) *env {
	t.Helper()
	cl := kubeapi.Shared(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	t.Cleanup(cancel)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	ns, err := cl.Client().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return &env{t: t, ctx: ctx, cl: cl, kube: cl.Client(), ns: ns.Name, cfg: Config{Kubeconfig: cl.Kubeconfig}}
}

// acquire takes a handle on resources, released when the test ends, and waits
// for it to sync.
func (e *env) acquire(resources Resources) *Handle {
	e.t.Helper()
	h, err := Acquire(e.cfg, resources)
	if err != nil {
		e.t.Fatalf("Acquire(%s): %v", resources, err)
	}
	e.t.Cleanup(h.Release)
	ctx, cancel := context.WithTimeout(e.ctx, settle)
	defer cancel()
	if err := h.WaitForSync(ctx, resources); err != nil {
		e.t.Fatalf("WaitForSync(%s): %v", resources, err)
	}
	return h
}

func (e *env) createService(svc *corev1.Service) *corev1.Service {
	e.t.Helper()
	out, err := e.kube.CoreV1().Services(e.ns).Create(e.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create service %s: %v", svc.Name, err)
	}
	return out
}

func (e *env) createSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	e.t.Helper()
	out, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Create(e.ctx, s, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create endpointslice %s: %v", s.Name, err)
	}
	return out
}

// clusterIPService is a ClusterIP service with one port, given IPs, or
// allocated ones when ips is empty.
func clusterIPService(name string, ips ...string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	if len(ips) > 0 {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ips[0], ips
	}
	return svc
}

// slice is an EndpointSlice with the given labels, address type and
// endpoints, and one "http" port.
func slice(name string, labels map[string]string, at discoveryv1.AddressType, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: labels},
		AddressType: at,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Protocol: new(corev1.ProtocolTCP), Port: new(int32(8080))}},
	}
}

// forService labels a slice as the service's, as the EndpointSlice
// controller does.
func forService(name string) map[string]string { return map[string]string{LabelServiceName: name} }

// endpoint is one address with its conditions; options set the rest.
func endpoint(addr string, ready, terminating bool, opts ...func(*discoveryv1.Endpoint)) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: new(ready), Serving: new(ready || terminating), Terminating: new(terminating)},
	}
	for _, o := range opts {
		o(&ep)
	}
	return ep
}

// pod sets an endpoint's hostname and target Pod.
func pod(name string) func(*discoveryv1.Endpoint) {
	return func(ep *discoveryv1.Endpoint) {
		ep.Hostname = new(name)
		ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: name}
	}
}

// eventually polls cond until it holds or timeout passes; describe says
// what was seen last, for the failure message.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s; last seen: %s", timeout, what, describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cached waits until get returns an object and returns it.
func cached[T any](t *testing.T, what string, get func() *T) *T {
	t.Helper()
	var obj *T
	eventually(t, settle, what+" cached", func() bool { obj = get(); return obj != nil }, func() string { return "nil" })
	return obj
}

// meta is the objectMeta the cache should keep for a created object.
func meta(om metav1.ObjectMeta) objectMeta {
	return objectMeta{namespace: om.Namespace, name: om.Name, resourceVersion: om.ResourceVersion}
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// families names the address families of as, in order.
func families(as []netip.Addr) string {
	var out []string
	for _, a := range as {
		out = append(out, map[bool]string{true: "IPv4", false: "IPv6"}[a.Is4()])
	}
	return strings.Join(out, ",")
}

func sliceNames(ss []*EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	slices.Sort(out)
	return out
}

// informerOf returns the running informer of k, or nil.
func informerOf(c *Cache, k Resources) *informer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.informers[k]
}

func registered(cfg Config) *Cache {
	registry.Lock()
	defer registry.Unlock()
	return registry.caches[cfg.key()]
}

// TestServicesCached shows each kind of service converted to its small
// form: kind, cluster IPs, lower-case ports and publishNotReady.
func TestServicesCached(t *testing.T) {
	e := newEnv(t, "wc-services")
	h := e.acquire(Services)
	ports := []corev1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80},
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
		{Name: "sig", Protocol: corev1.ProtocolSCTP, Port: 3868},
	}
	wantPorts := []Port{{"http", "tcp", 80}, {"dns", "udp", 53}, {"sig", "sctp", 3868}}
	tests := []struct {
		name string
		spec corev1.ServiceSpec
		ann  map[string]string
		// families of the cluster IPs, which the API allocates (so the
		// test can run again on the same cluster); "" for none.
		families string
		want     Service
	}{{
		name:     "cluster-ip",
		spec:     corev1.ServiceSpec{Ports: ports},
		families: "IPv4",
		want:     Service{Kind: ClusterIP, Ports: wantPorts},
	}, {
		name:     "dual-stack",
		spec:     corev1.ServiceSpec{IPFamilyPolicy: new(corev1.IPFamilyPolicyRequireDualStack), Ports: ports[:1]},
		families: "IPv4,IPv6",
		want:     Service{Kind: ClusterIP, Ports: wantPorts[:1]},
	}, {
		name: "headless-selector",
		spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"}, PublishNotReadyAddresses: true, Ports: ports[:2]},
		want: Service{Kind: HeadlessWithSelector, Ports: wantPorts[:2], PublishNotReady: true},
	}, {
		name: "headless-manual",
		spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone},
		ann:  map[string]string{AnnotationTolerateUnready: "true"},
		want: Service{Kind: HeadlessWithoutSelector, PublishNotReady: true},
	}, {
		name: "external",
		spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com."},
		want: Service{Kind: ExternalName, ExternalName: "db.example.com"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			created := e.createService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Annotations: tc.ann}, Spec: tc.spec})
			got := cached(t, "service "+tc.name, func() *Service { return h.Service(e.ns, tc.name) })
			want := tc.want
			want.objectMeta = meta(created.ObjectMeta)
			if tc.families != "" {
				want.ClusterIPs = addrs(created.Spec.ClusterIPs...)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("cached service:\n got %+v\nwant %+v", *got, want)
			}
			if f := families(got.ClusterIPs); f != tc.families {
				t.Errorf("cluster IPs %v are %q, want %q", got.ClusterIPs, f, tc.families)
			}
		})
	}
	if n := len(slices.DeleteFunc(h.Services(), func(s *Service) bool { return s.Namespace() != e.ns })); n != len(tests) {
		t.Errorf("Services() has %d in %s, want %d", n, e.ns, len(tests))
	}
}

// TestEndpointsMerged shows a service's slices cached as the API has
// them: conditions, hostnames, IPv4 and IPv6 slices, FQDN slices and
// unparsable addresses skipped; and the IP indexes. Pod names are kept,
// as endpoint_pod_names asks (TestPodNamesNotKept: not otherwise). Which
// of these addresses DNS serves is package kubesource's to say.
func TestEndpointsMerged(t *testing.T) {
	e := newEnv(t, "wc-endpoints")
	e.cfg.EndpointPodNames = true
	h := e.acquire(Services | EndpointSlices)
	for _, tc := range []struct {
		svc             string
		publishNotReady bool
	}{
		{svc: "strict"},
		{svc: "tolerant", publishNotReady: true},
	} {
		t.Run(tc.svc, func(t *testing.T) {
			svc := clusterIPService(tc.svc)
			svc.Spec.PublishNotReadyAddresses = tc.publishNotReady
			created := e.createService(svc)
			labels := forService(tc.svc)
			// Names order the slices: a duplicate is kept from the first.
			v4 := e.createSlice(slice(tc.svc+"-a-v4", labels, discoveryv1.AddressTypeIPv4,
				endpoint("10.1.0.2", true, false, pod("web-0")),
				endpoint("10.1.0.1", true, false),
				endpoint("10.1.0.3", false, false),
				endpoint("10.1.0.4", false, true),
				endpoint("10.1.0.010", true, false), // not canonical: skipped
			))
			e.createSlice(slice(tc.svc+"-b-v6", labels, discoveryv1.AddressTypeIPv6,
				endpoint("fd00:1::1", true, false),
				endpoint("fd00:1::2", false, false),
			))
			e.createSlice(slice(tc.svc+"-c-dup", labels, discoveryv1.AddressTypeIPv4, endpoint("10.1.0.1", true, false, pod("web-1"))))
			e.createSlice(slice(tc.svc+"-d-fqdn", labels, discoveryv1.AddressTypeFQDN, endpoint("db.example.com", true, false)))

			cachedSvc := cached(t, "service", func() *Service { return h.Service(e.ns, tc.svc) })
			var got []*EndpointSlice
			eventually(t, settle, "four slices cached", func() bool {
				got = h.SlicesForService(e.ns, tc.svc)
				return len(got) == 4
			}, func() string { return fmt.Sprint(sliceNames(got)) })

			checkCachedSlices(t, got, v4, tc.svc)
			if cachedSvc.PublishNotReady != tc.publishNotReady {
				t.Errorf("cached PublishNotReady = %t, want %t", cachedSvc.PublishNotReady, tc.publishNotReady)
			}
			checkIndexes(t, h, created, tc.svc)
		})
	}
}

// checkCachedSlices checks the conversion of the IPv4 slice (four of its
// five endpoints; the fifth has no usable address) and the FQDN slice (no
// endpoints).
func checkCachedSlices(t *testing.T, got []*EndpointSlice, v4 *discoveryv1.EndpointSlice, svc string) {
	t.Helper()
	byName := map[string]*EndpointSlice{}
	for _, s := range got {
		byName[s.Name()] = s
	}
	want := EndpointSlice{
		objectMeta: meta(v4.ObjectMeta),
		Service:    svc,
		Endpoints: []Endpoint{
			{Addresses: addrs("10.1.0.2"), Hostname: "web-0", PodName: "web-0", Ready: true},
			{Addresses: addrs("10.1.0.1"), Ready: true},
			{Addresses: addrs("10.1.0.3")},
			{Addresses: addrs("10.1.0.4"), Terminating: true},
		},
		Ports: []Port{{"http", "tcp", 8080}},
	}
	if s := byName[v4.Name]; s == nil || !reflect.DeepEqual(*s, want) {
		t.Errorf("cached IPv4 slice:\n got %+v\nwant %+v", s, want)
	}
	if s := byName[svc+"-d-fqdn"]; s == nil || len(s.Endpoints) != 0 || s.Service != svc {
		t.Errorf("cached FQDN slice = %+v, want no endpoints", s)
	}
}

// checkIndexes checks that the cached slices keep every usable address,
// served or not (multicluster reads them all), and the cluster IP. The
// cache spans all services, and the two services of the test share
// addresses, so only this one's slices are compared.
func checkIndexes(t *testing.T, h *Handle, created *corev1.Service, svc string) {
	t.Helper()
	ours := func(ss []*EndpointSlice) []*EndpointSlice {
		return slices.DeleteFunc(ss, func(s *EndpointSlice) bool { return s.Namespace() != created.Namespace || s.Service != svc })
	}
	for addr, want := range map[string][]string{
		"10.1.0.1":  {svc + "-a-v4", svc + "-c-dup"},
		"10.1.0.3":  {svc + "-a-v4"},
		"10.1.0.4":  {svc + "-a-v4"},
		"fd00:1::2": {svc + "-b-v6"},
		"10.1.0.10": nil, // "10.1.0.010" was skipped, in either reading
		"10.1.0.8":  nil,
	} {
		if got := sliceNames(ours(slicesWithAddr(h.EndpointSlices(), netip.MustParseAddr(addr)))); !slices.Equal(got, want) {
			t.Errorf("slices with %s = %q, want %q", addr, got, want)
		}
	}
	ip := netip.MustParseAddr(created.Spec.ClusterIP)
	if got := h.Service(created.Namespace, svc); got == nil || !slices.Contains(got.ClusterIPs, ip) {
		t.Errorf("Service(%s, %s) = %v, want cluster IP %s", created.Namespace, svc, got, ip)
	}
}

func slicesWithAddr(ss []*EndpointSlice, a netip.Addr) []*EndpointSlice {
	return slices.DeleteFunc(ss, func(s *EndpointSlice) bool {
		return !slices.ContainsFunc(s.Endpoints, func(e Endpoint) bool { return slices.Contains(e.Addresses, a) })
	})
}

// TestSharing shows one Cache and one informer per resource for a Config,
// whatever the number of handles; that Release of one handle leaves the
// other serving; and that the last Release removes the cache and stops its
// informers, leaving no goroutine behind.
func TestSharing(t *testing.T) {
	e := newEnv(t, "wc-sharing")
	resources := Services | EndpointSlices
	// A first cycle opens the connections that client-go keeps for reuse
	// whatever we do; the goroutines counted after it are ours.
	e.acquire(resources).Release()
	if c := registered(e.cfg); c != nil {
		t.Fatalf("registry still holds the cache after its only Release")
	}
	before := settledGoroutines()

	h1, h2 := e.acquire(resources), e.acquire(resources)
	if h1.Cache != h2.Cache || registered(e.cfg) != h1.Cache {
		t.Fatalf("two Acquire calls with one Config gave different caches")
	}
	infs := map[Resources]*informer{Services: informerOf(h1.Cache, Services), EndpointSlices: informerOf(h1.Cache, EndpointSlices)}
	for k, inf := range infs {
		if inf == nil || inf.refs != 2 {
			t.Fatalf("%s informer = %+v, want one shared by two handles", k, inf)
		}
	}
	if got := len(h1.informers); got != 2 {
		t.Errorf("%d informers, want 2", got)
	}
	running := runtime.NumGoroutine()

	h1.Release()
	h1.Release() // a second Release must not count twice
	if registered(e.cfg) != h2.Cache || informerOf(h2.Cache, Services) != infs[Services] || infs[Services].refs != 1 {
		t.Fatalf("after one of two Releases the cache or its informer changed")
	}
	e.createService(clusterIPService("after-release"))
	cached(t, "service created after the first Release", func() *Service { return h2.Service(e.ns, "after-release") })

	h2.Release()
	if registered(e.cfg) != nil {
		t.Errorf("registry still holds the cache after the last Release")
	}
	for k, inf := range infs {
		select {
		case <-inf.done:
		default:
			t.Errorf("%s informer still running after the last Release", k)
		}
	}
	eventually(t, 10*time.Second, fmt.Sprintf("goroutines back to %d (±3)", before),
		func() bool { return runtime.NumGoroutine() <= before+3 },
		func() string { return fmt.Sprint(runtime.NumGoroutine()) })
	t.Logf("goroutines: %d before, %d with the cache, %d after", before, running, runtime.NumGoroutine())
}

// settledGoroutines counts goroutines once the count stops moving.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

// TestPodsOnDemand shows that Pods are watched only by the handles that
// ask for them.
func TestPodsOnDemand(t *testing.T) {
	e := newEnv(t, "wc-pods")
	h := e.acquire(Services | EndpointSlices)
	if inf := informerOf(h.Cache, Pods); inf != nil {
		t.Fatalf("pods informer exists without a handle asking for Pods")
	}
	hp := e.acquire(Services | EndpointSlices | Pods)
	if hp.Cache != h.Cache {
		t.Fatalf("Acquire with Pods gave another cache")
	}
	pods := informerOf(h.Cache, Pods)
	if pods == nil || !h.HasSynced(Pods) {
		t.Fatalf("pods informer = %v, synced %t; want a synced one", pods, h.HasSynced(Pods))
	}
	if refs := informerOf(h.Cache, Services).refs; refs != 2 {
		t.Errorf("services informer refs = %d, want 2", refs)
	}

	hp.Release()
	if informerOf(h.Cache, Pods) != nil || h.HasSynced(Pods) {
		t.Errorf("pods informer still registered after its handle's Release")
	}
	select {
	case <-pods.done:
	default:
		t.Errorf("pods informer still running after its handle's Release")
	}
	if !h.HasSynced(Services|EndpointSlices) || informerOf(h.Cache, Services).refs != 1 {
		t.Errorf("services informer affected by releasing the pods handle")
	}
}

// subscribe collects the events of ns.
func subscribe(t *testing.T, c *Cache, ns string) <-chan Event {
	ch := make(chan Event, 1000)
	cancel := c.Subscribe(func(ev Event) {
		if ev.Namespace == ns {
			select {
			case ch <- ev:
			default: // never reached in a test of a few events
			}
		}
	})
	t.Cleanup(cancel)
	return ch
}

// nextEvent waits for the next event of kind about name, skipping others.
func nextEvent(t *testing.T, ch <-chan Event, kind Resources, name string) Event {
	t.Helper()
	timeout := time.After(settle)
	for {
		select {
		case ev := <-ch:
			if ev.Resource == kind && ev.Service == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event for %s within %s", kind, name, settle)
		}
	}
}

// TestEvents shows an Event for each change of a service and of a slice,
// named after the slice's service, dated by the trigger-time annotation.
func TestEvents(t *testing.T) {
	e := newEnv(t, "wc-events")
	h := e.acquire(Services | EndpointSlices)
	ch := subscribe(t, h.Cache, e.ns)
	services := e.kube.CoreV1().Services(e.ns)

	start := time.Now()
	e.createService(clusterIPService("web"))
	ev := nextEvent(t, ch, Services, "web")
	if ev.Changed.Before(start) || ev.Changed.After(time.Now()) || h.Service(e.ns, "web") == nil {
		t.Errorf("add: event %+v (Changed not the delivery time, or service not cached)", ev)
	}

	svc, err := services.Get(e.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports[0].Port = 81
	if _, err := services.Update(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ch, Services, "web")
	if got := h.Service(e.ns, "web"); got == nil || got.Ports[0].Port != 81 {
		t.Errorf("update: event before the cache has the new port: %+v", got)
	}

	if err := services.Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ch, Services, "web")
	if got := h.Service(e.ns, "web"); got != nil {
		t.Errorf("delete: event before the service left the cache: %+v", got)
	}

	trigger := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	s := slice("web-x1", forService("web"), discoveryv1.AddressTypeIPv4, endpoint("10.2.0.1", true, false))
	s.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: trigger.Format(time.RFC3339Nano)}
	s = e.createSlice(s)
	if ev := nextEvent(t, ch, EndpointSlices, "web"); !ev.Changed.Equal(trigger) {
		t.Errorf("slice event Changed = %s, want the trigger time %s", ev.Changed, trigger)
	}

	// A slice moving to another service changes both: old name first.
	s.Labels[LabelServiceName] = "api"
	if _, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ch, EndpointSlices, "web")
	select {
	case ev := <-ch:
		if ev.Resource != EndpointSlices || ev.Service != "api" {
			t.Errorf("after the old service's event: %+v, want the new service api", ev)
		}
	case <-time.After(settle):
		t.Errorf("no event for the slice's new service")
	}
}

// TestSync shows HasSynced and WaitForSync against the API server, and
// WaitForSync giving up at the caller's deadline with the resources named
// when the server cannot be reached.
func TestSync(t *testing.T) {
	e := newEnv(t, "wc-sync")
	h := e.acquire(Services | EndpointSlices)
	if !h.HasSynced(Services|EndpointSlices) || h.HasSynced(Services|Pods) {
		t.Errorf("HasSynced: want true for the resources acquired, false with Pods")
	}

	// Port 1 on loopback: nothing listens, every call is refused at once.
	bad, err := Acquire(Config{Endpoint: "https://127.0.0.1:1"}, Services|EndpointSlices)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		start := time.Now()
		bad.Release()
		t.Logf("Release of the unreachable cache took %s", time.Since(start).Round(time.Millisecond))
	}()
	const wait = 2 * time.Second
	ctx, cancel := context.WithTimeout(e.ctx, wait)
	defer cancel()
	start := time.Now()
	err = bad.WaitForSync(ctx, Services|EndpointSlices)
	took := time.Since(start)
	if !errors.Is(err, errNotSynced) || !strings.Contains(err.Error(), "services,endpointslices") {
		t.Errorf("WaitForSync = %v, want errNotSynced naming services,endpointslices", err)
	}
	if took < wait-100*time.Millisecond || took > wait+time.Second {
		t.Errorf("WaitForSync returned after %s, want at the %s deadline", took, wait)
	}
	t.Logf("WaitForSync: %v", err)
	if bad.HasSynced(Services) {
		t.Errorf("HasSynced true without a server")
	}
}

// TestServiceImports shows ServiceImports cached with type, IPs and ports,
// and the MCS-labelled slices of an import with their source clusters.
func TestServiceImports(t *testing.T) {
	e := newEnv(t, "wc-mcs")
	h := e.acquire(ServiceImports | EndpointSlices)
	mcs, err := mcsclient.NewForConfig(e.cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	imports := mcs.MulticlusterV1alpha1().ServiceImports(e.ns)
	for _, tc := range []struct {
		name string
		spec mcsv1alpha1.ServiceImportSpec
		want ServiceImport
	}{{
		name: "db",
		spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, IPs: []string{"10.100.0.7"},
			Ports: []mcsv1alpha1.ServicePort{{Name: "SQL", Protocol: corev1.ProtocolTCP, Port: 5432}}},
		want: ServiceImport{IPs: addrs("10.100.0.7"), Ports: []Port{{"sql", "tcp", 5432}}},
	}, {
		name: "cache",
		spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.Headless,
			Ports: []mcsv1alpha1.ServicePort{{Name: "redis", Protocol: corev1.ProtocolTCP, Port: 6379}}},
		want: ServiceImport{Headless: true, Ports: []Port{{"redis", "tcp", 6379}}},
	}} {
		created, err := imports.Create(e.ctx, &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: tc.spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create serviceimport %s: %v", tc.name, err)
		}
		got := cached(t, "serviceimport "+tc.name, func() *ServiceImport { return h.ServiceImport(e.ns, tc.name) })
		want := tc.want
		want.objectMeta = meta(created.ObjectMeta)
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("cached serviceimport:\n got %+v\nwant %+v", *got, want)
		}
	}

	mcsLabels := func(cluster string) map[string]string {
		return map[string]string{LabelMultiClusterServiceName: "db", LabelSourceCluster: cluster}
	}
	e.createSlice(slice("db-west", mcsLabels("west"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.1", true, false), endpoint("10.3.0.2", true, false)))
	e.createSlice(slice("db-east", mcsLabels("east"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.1", true, false)))
	e.createSlice(slice("db-local", forService("db"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.9", true, false)))
	var got []*EndpointSlice
	eventually(t, settle, "two imported slices cached", func() bool {
		got = h.SlicesForImport(e.ns, "db")
		return len(got) == 2
	}, func() string { return fmt.Sprint(sliceNames(got)) })
	clusters := map[string]string{}
	for _, s := range got {
		clusters[s.Name()] = s.SourceCluster
		if s.MultiClusterService != "db" || s.Service != "" {
			t.Errorf("slice %s: MultiClusterService %q, Service %q; want db and none", s.Name(), s.MultiClusterService, s.Service)
		}
	}
	if want := map[string]string{"db-west": "west", "db-east": "east"}; !reflect.DeepEqual(clusters, want) {
		t.Errorf("source clusters = %v, want %v", clusters, want)
	}
}

// TestRelistCounted shows relists_total counting a relist whichever way
// client-go makes it: a plain list, or (its default) a watch that sends
// the initial events, with the options its reflector uses. The first list
// and plain watches are not relists.
func TestRelistCounted(t *testing.T) {
	e := newEnv(t, "wc-relist")
	c, err := newCache(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	lw := newConnState(Services).instrument(c.listingOf(Services).lw)
	counter := relists.WithLabelValues("services")
	base := metricValue(counter)
	watch := func(o metav1.ListOptions) {
		t.Helper()
		w, err := lw.WatchWithContext(e.ctx, o)
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		w.Stop()
	}
	watchList := metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	for i, step := range []struct {
		name string
		call func()
		want float64
	}{
		{"first watch-list", func() { watch(watchList) }, 0},
		{"second watch-list", func() { watch(watchList) }, 1},
		{"plain watch", func() { watch(metav1.ListOptions{AllowWatchBookmarks: true}) }, 1},
		{"plain list", func() {
			if _, err := lw.ListWithContext(e.ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("list: %v", err)
			}
		}, 2},
	} {
		step.call()
		if got := metricValue(counter) - base; got != step.want {
			t.Errorf("step %d (%s): relists_total rose by %v, want %v", i, step.name, got, step.want)
		}
	}
}

// metricValue reads a gauge or counter, as testutil.ToFloat64 would; testutil
// itself needs github.com/kylelemons/godebug, which go.mod lacks.
func metricValue(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		panic(err)
	}
	if g := out.GetGauge(); g != nil {
		return g.GetValue()
	}
	return out.GetCounter().GetValue()
}

// TestOutage shows the cache serving its last state while the API server
// is down, reporting the outage in its metrics, and catching up with
// changes made after it comes back. It stops the shared API server, so it
// restarts it whatever happens.
func TestOutage(t *testing.T) {
	e := newEnv(t, "wc-outage")
	h := e.acquire(Services)
	e.createService(clusterIPService("old"))
	cached(t, "service old", func() *Service { return h.Service(e.ns, "old") })

	reachable := apiReachable.WithLabelValues("services")
	show := func() string { return fmt.Sprint(metricValue(reachable)) }
	if v := metricValue(reachable); v != 1 {
		t.Fatalf("api_reachable{services} = %v before the outage, want 1", v)
	}
	errs0 := metricValue(watchErrors.WithLabelValues("services"))
	relists0 := metricValue(relists.WithLabelValues("services"))

	t.Cleanup(func() {
		if err := e.cl.StartAPIServer(context.Background()); err != nil {
			t.Errorf("restart kube-apiserver: %v", err)
		}
	})
	if err := e.cl.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	eventually(t, settle, "api_reachable{services} = 0 during the outage",
		func() bool { return metricValue(reachable) == 0 }, show)
	t.Logf("outage noticed in %s", time.Since(down).Round(time.Millisecond))
	if h.Service(e.ns, "old") == nil || !h.HasSynced(Services) {
		t.Errorf("during the outage: service old not served, or cache no longer synced")
	}

	if err := e.cl.StartAPIServer(e.ctx); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	e.createService(clusterIPService("new"))
	if err := e.kube.CoreV1().Services(e.ns).Delete(e.ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, recovery, "the cache sees new created and old deleted after the outage",
		func() bool { return h.Service(e.ns, "new") != nil && h.Service(e.ns, "old") == nil },
		func() string { return fmt.Sprintf("new %v, old %v", h.Service(e.ns, "new"), h.Service(e.ns, "old")) })
	t.Logf("caught up %s after the restart", time.Since(up).Round(time.Millisecond))
	eventually(t, settle, "api_reachable{services} = 1 after the outage",
		func() bool { return metricValue(reachable) == 1 }, show)

	errs := metricValue(watchErrors.WithLabelValues("services")) - errs0
	rel := metricValue(relists.WithLabelValues("services")) - relists0
	t.Logf("during the outage: %v failed calls, %v relists", errs, rel)
	if errs == 0 && rel == 0 {
		t.Errorf("neither errors_total nor relists_total of services increased")
	}
}

// TestPermissionDenied runs a cache as a ServiceAccount that may list and
// watch services but nothing else. Services sync; EndpointSlices are
// reported refused (both verbs) and keep the cache unsynced, so readiness
// stays failed; granting the permission recovers without a restart.
func TestPermissionDenied(t *testing.T) {
	e := newEnv(t, "wc-rbac")
	rbac := e.kube.RbacV1()
	sa, err := e.kube.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dns"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "watch"}}},
	}
	if role, err = rbac.ClusterRoles().Create(e.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: sa.Name}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(e.ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	token, err := e.cl.ServiceAccountToken(e.ctx, e.ns, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := e.cl.KubeconfigForToken(token)
	if err != nil {
		t.Fatal(err)
	}

	h, err := Acquire(Config{Kubeconfig: kubeconfig}, Services|EndpointSlices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Release)
	denied := func(verb string) float64 {
		return metricValue(permissionDenied.WithLabelValues("endpointslices", verb))
	}
	show := func() string {
		return fmt.Sprintf("services synced %v, all synced %v, denied list=%v watch=%v",
			h.HasSynced(Services), h.HasSynced(Services|EndpointSlices), denied("list"), denied("watch"))
	}
	eventually(t, settle, "services synced and endpointslices refused",
		func() bool { return h.HasSynced(Services) && denied("list") == 1 && denied("watch") == 1 }, show)
	if h.HasSynced(Services|EndpointSlices) || h.HasSynced(EndpointSlices) {
		t.Errorf("synced without permission on endpointslices: %s", show())
	}
	for _, verb := range []string{"list", "watch"} {
		if v := metricValue(permissionDenied.WithLabelValues("services", verb)); v != 0 {
			t.Errorf("permission_denied{services,%s} = %v, want 0", verb, v)
		}
	}

	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}})
	if _, err := rbac.ClusterRoles().Update(e.ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The reflector retries with a backoff of up to 30 s.
	eventually(t, recovery, "synced once the permission is granted",
		func() bool {
			return h.HasSynced(Services|EndpointSlices) && denied("list") == 0 && denied("watch") == 0
		}, show)
}

// TestPodNamesNotKept: without EndpointPodNames the cache keeps no pod
// name, which no answer needs then.
func TestPodNamesNotKept(t *testing.T) {
	e := newEnv(t, "wc-podnames")
	h := e.acquire(Services | EndpointSlices)
	e.createService(clusterIPService("web"))
	e.createSlice(slice("web-a", forService("web"), discoveryv1.AddressTypeIPv4, endpoint("10.1.0.2", true, false, pod("web-0"))))
	var got []*EndpointSlice
	eventually(t, settle, "the slice cached", func() bool {
		got = h.SlicesForService(e.ns, "web")
		return len(got) == 1
	}, func() string { return fmt.Sprint(sliceNames(got)) })
	if eps := got[0].Endpoints; len(eps) != 1 || eps[0].PodName != "" || eps[0].Addresses[0].String() != "10.1.0.2" {
		t.Errorf("cached endpoints %+v: want 10.1.0.2 without its pod name", eps)
	}
}
