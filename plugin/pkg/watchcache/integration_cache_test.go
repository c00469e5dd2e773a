package watchcache

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
