package watchcache

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// noise changes what every write may change without changing what DNS
// reads: the resource version, an annotation, managedFields, the time.
func noise(m *metav1.ObjectMeta) {
	m.ResourceVersion = "2"
	m.Annotations = map[string]string{"touched": "yes"}
	m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &metav1.Time{Time: time.Unix(2000, 0)}}}
	m.CreationTimestamp = metav1.Time{Time: time.Unix(3000, 0)}
}

// factCase is an API object, an update that changes nothing DNS reads and
// one that changes an answer.
type factCase[T any] struct {
	name              string
	obj               func() T
	convert           func(any) (any, error)
	quiet, meaningful func(T)
}

func (c factCase[T]) run(t *testing.T) {
	t.Run(c.name, func(t *testing.T) {
		conv := func(change func(T)) any {
			o := c.obj()
			if change != nil {
				change(o)
			}
			out, err := c.convert(o)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		before := conv(nil)
		if !sameFacts(before, conv(nil)) {
			t.Error("two conversions of one object differ")
		}
		if !sameFacts(before, conv(c.quiet)) {
			t.Error("an update DNS does not read counts as a change")
		}
		if sameFacts(before, conv(c.meaningful)) {
			t.Error("an update DNS reads counts as no change")
		}
	})
}

func TestSameFacts(t *testing.T) {
	ready, notReady := true, false
	port := int32(80)
	factCase[*corev1.Service]{
		name: "service",
		obj: func() *corev1.Service {
			return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1"},
				Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		},
		convert: toService,
		quiet: func(s *corev1.Service) {
			noise(&s.ObjectMeta)
			s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True"}}
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		},
		meaningful: func(s *corev1.Service) { s.Spec.Ports[0].Port = 8080 },
	}.run(t)
	factCase[*discoveryv1.EndpointSlice]{
		name: "endpointslice",
		obj: func() *discoveryv1.EndpointSlice {
			return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", ResourceVersion: "1",
				Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
				AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: &port}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
		},
		convert: toEndpointSlice,
		quiet: func(s *discoveryv1.EndpointSlice) {
			noise(&s.ObjectMeta)
			s.Endpoints[0].NodeName = new("node-b")
			s.Endpoints[0].Conditions.Serving = &ready
		},
		meaningful: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Ready = &notReady },
	}.run(t)
	factCase[*corev1.Namespace]{
		name: "namespace",
		obj: func() *corev1.Namespace {
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", ResourceVersion: "1", Labels: map[string]string{"team": "a"}}}
		},
		convert: toNamespace,
		quiet: func(n *corev1.Namespace) {
			noise(&n.ObjectMeta)
			n.Status.Phase = corev1.NamespaceTerminating
		},
		meaningful: func(n *corev1.Namespace) { n.Labels["team"] = "b" },
	}.run(t)
	factCase[*corev1.Pod]{
		name: "pod",
		obj: func() *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1"},
				Status: corev1.PodStatus{PodIP: "10.2.0.1", PodIPs: []corev1.PodIP{{IP: "10.2.0.1"}}}}
		},
		convert: toPod,
		quiet: func(p *corev1.Pod) {
			noise(&p.ObjectMeta)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		},
		meaningful: func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "10.2.0.2", []corev1.PodIP{{IP: "10.2.0.2"}} },
	}.run(t)
	factCase[*mcsv1beta1.ServiceImport]{
		name: "serviceimport",
		obj: func() *mcsv1beta1.ServiceImport {
			return &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", ResourceVersion: "1"},
				Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.3.0.1"}}}
		},
		convert: toServiceImport,
		quiet: func(si *mcsv1beta1.ServiceImport) {
			noise(&si.ObjectMeta)
			si.Status.Clusters = []mcsv1beta1.ClusterStatus{{Cluster: "b"}}
		},
		meaningful: func(si *mcsv1beta1.ServiceImport) { si.Spec.IPs = []string{"10.3.0.2"} },
	}.run(t)
	factCase[*networkingv1.ServiceCIDR]{
		name: "servicecidr",
		obj: func() *networkingv1.ServiceCIDR {
			return &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", ResourceVersion: "1"},
				Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16"}}}
		},
		convert: toServiceCIDR,
		quiet: func(sc *networkingv1.ServiceCIDR) {
			noise(&sc.ObjectMeta)
			sc.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True"}}
		},
		meaningful: func(sc *networkingv1.ServiceCIDR) { sc.Spec.CIDRs = []string{"10.97.0.0/16"} },
	}.run(t)
}

// TestSameFactsOtherTypes: objects of two kinds never count as the same.
func TestSameFactsOtherTypes(t *testing.T) {
	if sameFacts(&Service{}, &EndpointSlice{}) || sameFacts("x", "x") {
		t.Error("unlike objects count as the same facts")
	}
}

// TestSameSliceFactsKnowsEveryField: sameSliceFacts compares fields by
// name; a field added to EndpointSlice or Endpoint must be added there
// (and here).
func TestSameSliceFactsKnowsEveryField(t *testing.T) {
	fieldNames := func(v any) []string {
		var out []string
		for i := range reflect.TypeOf(v).NumField() {
			out = append(out, reflect.TypeOf(v).Field(i).Name)
		}
		return out
	}
	if got, want := fieldNames(EndpointSlice{}), []string{"objectMeta", "Service", "MultiClusterService", "SourceCluster", "Endpoints", "Ports", "Changed", "zones"}; !slices.Equal(got, want) {
		t.Errorf("EndpointSlice fields %v, sameSliceFacts knows %v", got, want)
	}
	if got, want := fieldNames(Endpoint{}), []string{"Addresses", "Hostname", "PodName", "Ready", "Terminating", "zone"}; !slices.Equal(got, want) {
		t.Errorf("Endpoint fields %v, sameEndpoint knows %v", got, want)
	}
	if got, want := fieldNames(objectMeta{}), []string{"namespace", "name", "resourceVersion"}; !slices.Equal(got, want) {
		t.Errorf("objectMeta fields %v, sameSliceFacts knows %v", got, want)
	}
}

// TestSameSliceFactsMatchesReflection: on random pairs of slices, one often
// a small change of the other, sameSliceFacts says what reflect.DeepEqual
// of everything but the resource version and the change time says, an
// empty list and an absent one taken as equal.
func TestSameSliceFactsMatchesReflection(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	clearMeta := func(s *EndpointSlice) {
		s.resourceVersion, s.Changed = "", time.Time{}
		if len(s.Endpoints) == 0 {
			s.Endpoints = nil
		}
	}
	same := 0
	for i := range 5000 {
		a := randomSlice(rng)
		b := a.DeepCopy()
		switch rng.IntN(6) {
		case 0:
			b = randomSlice(rng)
		case 1:
			b.ResourceVersion += "1"
			b.Annotations[annotationTriggerTime] = "2026-01-01T00:00:00Z"
		case 2:
			if len(b.Endpoints) > 0 {
				b.Endpoints[rng.IntN(len(b.Endpoints))].Conditions.Ready = ptr(rng.IntN(2) == 0)
			}
		case 3:
			if len(b.Endpoints) > 0 {
				b.Endpoints[rng.IntN(len(b.Endpoints))].Zone = ptr("zone-c")
			}
		case 4:
			if len(b.Ports) > 0 {
				b.Ports[0].Port = ptr(int32(81))
			}
		}
		ca, _ := convertSlice(a, rng.IntN(2) == 0)
		cb, _ := convertSlice(b, rng.IntN(3) > 0)
		x, y := *ca.(*EndpointSlice), *cb.(*EndpointSlice)
		clearMeta(&x)
		clearMeta(&y)
		want := reflect.DeepEqual(x, y)
		if got := sameSliceFacts(ca.(*EndpointSlice), cb.(*EndpointSlice)); got != want {
			t.Fatalf("pair %d: sameSliceFacts %v, reflection %v\n%+v\n%+v", i, got, want, x, y)
		}
		if want {
			same++
		}
	}
	if same < 1000 {
		t.Errorf("only %d of 5000 pairs were the same: the test says little", same)
	}
}
