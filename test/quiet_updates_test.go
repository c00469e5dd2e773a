package test

import (
	"maps"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// skippedCounts reads coredns_watchcache_updates_skipped_total by resource.
func skippedCounts(t *testing.T) map[string]float64 {
	t.Helper()
	return byResource(t, "coredns_watchcache_updates_skipped_total")
}

// settledSerial is the zone's SOA serial once two readings half a second
// apart agree: the servers watch every namespace, and the changes of the
// test before (its cleanup) may still be arriving.
func settledSerial(t *testing.T, s *server, zone string) uint32 {
	t.Helper()
	last := soaSerial(t, s, zone)
	for range 60 {
		time.Sleep(500 * time.Millisecond)
		now := soaSerial(t, s, zone)
		if now == last {
			return now
		}
		last = now
	}
	t.Fatalf("the %s SOA serial does not settle: %d", zone, last)
	return 0
}

// annotate adds an annotation to an object through get, change, update.
func annotate[T metav1.Object](t *testing.T, get func() (T, error), update func(T) error) {
	t.Helper()
	obj, err := get()
	if err != nil {
		t.Fatal(err)
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a["example.com/touched"] = obj.GetResourceVersion()
	obj.SetAnnotations(a)
	if err := update(obj); err != nil {
		t.Fatal(err)
	}
}

// TestKubeschemaQuietUpdates: updates that change nothing DNS reads (an
// annotation on a Service, on its EndpointSlice, on its Namespace) publish
// nothing: the SOA serial, the answers and the programming-latency
// histogram stay as they were. The next real change publishes.
func TestKubeschemaQuietUpdates(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("quiet")
	// namespace_labels makes the server watch Namespaces too.
	s := e.server([]string{"namespace_labels example.com/hidden!=true"})
	e.createService(ns, headlessService("db", servicePort("sql", corev1.ProtocolTCP, 5432)))
	e.createSlice(ns, endpointSlice("db-1", "db", []discoveryv1.EndpointPort{slicePort("sql", corev1.ProtocolTCP, 5432)}, endpoint{addr: "10.20.0.1"}))
	name := ksSvc("db", ns)
	expect(t, s, "udp", name, dns.TypeA, answer(rrLine(name, "A", "10.20.0.1")), settleTimeout)

	serial := settledSerial(t, s, clusterZone)
	programmed := programmingCounts(t, "kubeschema")
	skipped := skippedCounts(t)
	svcs, slices, nss := e.kube.CoreV1().Services(ns), e.kube.DiscoveryV1().EndpointSlices(ns), e.kube.CoreV1().Namespaces()
	for range 3 {
		annotate(t, func() (*corev1.Service, error) { return svcs.Get(e.ctx, "db", metav1.GetOptions{}) },
			func(o *corev1.Service) error { _, err := svcs.Update(e.ctx, o, metav1.UpdateOptions{}); return err })
		annotate(t, func() (*discoveryv1.EndpointSlice, error) { return slices.Get(e.ctx, "db-1", metav1.GetOptions{}) },
			func(o *discoveryv1.EndpointSlice) error {
				_, err := slices.Update(e.ctx, o, metav1.UpdateOptions{})
				return err
			})
		annotate(t, func() (*corev1.Namespace, error) { return nss.Get(e.ctx, ns, metav1.GetOptions{}) },
			func(o *corev1.Namespace) error { _, err := nss.Update(e.ctx, o, metav1.UpdateOptions{}); return err })
	}
	// The updates have arrived once each was counted as skipped.
	var now map[string]float64
	eventually(t, settleTimeout, "9 updates counted as skipped", func() bool {
		now = skippedCounts(t)
		return now["services"]-skipped["services"] >= 3 && now["endpointslices"]-skipped["endpointslices"] >= 3 &&
			now["namespaces"]-skipped["namespaces"] >= 3
	})
	if got := soaSerial(t, s, clusterZone); got != serial {
		t.Errorf("SOA serial %d after updates DNS does not read, was %d", got, serial)
	}
	if got := programmingCounts(t, "kubeschema"); !maps.Equal(got, programmed) {
		t.Errorf("programming histogram %v after updates DNS does not read, was %v", got, programmed)
	}
	expect(t, s, "udp", name, dns.TypeA, answer(rrLine(name, "A", "10.20.0.1")), settleTimeout)

	e.replaceEndpoints(ns, "db-1", endpoint{addr: "10.20.0.2"})
	expect(t, s, "udp", name, dns.TypeA, answer(rrLine(name, "A", "10.20.0.2")), settleTimeout)
	if got := soaSerial(t, s, clusterZone); got <= serial {
		t.Errorf("SOA serial %d after a real change, was %d: want it larger", got, serial)
	}
}

// TestMulticlusterQuietUpdates: the same for multicluster's ServiceImports
// and their EndpointSlices.
func TestMulticlusterQuietUpdates(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("quiet")
	s := e.server(mcCorefile)
	e.createImport(ns, mcClusterSetIP("shop", []string{"10.247.9.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, mcSlice("shop-a", "shop", "cluster-a", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
		endpoint{addr: "10.246.9.10"}))
	name := mcSvc("shop", ns)
	expect(t, s, "udp", name, dns.TypeA, answer(rrLine(name, "A", "10.247.9.10")), settleTimeout)

	serial := settledSerial(t, s, clustersetZone)
	skipped := skippedCounts(t)
	imports, slices := e.mcs.MulticlusterV1alpha1().ServiceImports(ns), e.kube.DiscoveryV1().EndpointSlices(ns)
	for range 3 {
		annotate(t, func() (*mcsv1alpha1.ServiceImport, error) { return imports.Get(e.ctx, "shop", metav1.GetOptions{}) },
			func(o *mcsv1alpha1.ServiceImport) error {
				_, err := imports.Update(e.ctx, o, metav1.UpdateOptions{})
				return err
			})
		annotate(t, func() (*discoveryv1.EndpointSlice, error) { return slices.Get(e.ctx, "shop-a", metav1.GetOptions{}) },
			func(o *discoveryv1.EndpointSlice) error {
				_, err := slices.Update(e.ctx, o, metav1.UpdateOptions{})
				return err
			})
	}
	eventually(t, settleTimeout, "6 updates counted as skipped", func() bool {
		now := skippedCounts(t)
		return now["serviceimports"]-skipped["serviceimports"] >= 3 && now["endpointslices"]-skipped["endpointslices"] >= 3
	})
	if got := soaSerial(t, s, clustersetZone); got != serial {
		t.Errorf("SOA serial %d after updates DNS does not read, was %d", got, serial)
	}

	e.updateImport(ns, "shop", func(imp *mcsv1alpha1.ServiceImport) { imp.Spec.IPs = []string{"10.247.9.11"} })
	expect(t, s, "udp", name, dns.TypeA, answer(rrLine(name, "A", "10.247.9.11")), settleTimeout)
	if got := soaSerial(t, s, clustersetZone); got <= serial {
		t.Errorf("SOA serial %d after a real change, was %d: want it larger", got, serial)
	}
}
