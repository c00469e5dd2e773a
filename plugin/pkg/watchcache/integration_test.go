package watchcache

import (
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/schemadns/schemadns/internal/kubeapi"
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
