package main

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// shape is one cluster the servers absorb updates on: bench's S2 and S4,
// with the same names, addresses and ports (bench/internal/fixture), and
// objects as a real API server sends them.
type shape struct {
	Name, Title string
	// ClusterIP and Headless services, spread evenly over the numbering,
	// each with Endpoints endpoints in one EndpointSlice.
	ClusterIP, Headless, Endpoints int
	// PerNamespace services share a namespace; 0 puts all in one.
	PerNamespace int
	// Updates is how many address changes are fed by default: enough for
	// about 10 s of a server's CPU at full scale (some 40 µs each on S2,
	// 150 on S4, on this project's two-core test machine).
	Updates int
}

func (s shape) services() int { return s.ClusterIP + s.Headless }

func (s shape) namespace(i int) string {
	if s.PerNamespace == 0 {
		return "bench-all"
	}
	return fmt.Sprintf("bench-%03d", i/s.PerNamespace)
}

func (s shape) namespaces() []string {
	var out []string
	for i := 0; i < s.services(); i++ {
		if ns := s.namespace(i); len(out) == 0 || out[len(out)-1] != ns {
			out = append(out, ns)
		}
	}
	return out
}

// isHeadless spreads the headless services evenly over the numbering, as
// bench does.
func (s shape) isHeadless(i int) bool {
	n, h := s.services(), s.Headless
	return (i+1)*h/n > i*h/n
}

func (s shape) serviceName(i int) string {
	if s.isHeadless(i) {
		return fmt.Sprintf("hl-%05d", i)
	}
	return fmt.Sprintf("svc-%05d", i)
}

func (s shape) describe() string {
	out := ""
	if s.ClusterIP > 0 {
		out = fmt.Sprintf("%d ClusterIP + ", s.ClusterIP)
	}
	out += fmt.Sprintf("%d headless services × %d endpoints with hostnames", s.Headless, s.Endpoints)
	if n := len(s.namespaces()); n == 1 {
		out += ", one namespace"
	} else {
		out += fmt.Sprintf(", %d namespaces", n)
	}
	return out
}

// shapesAt are the shapes of each scale; small is a tenth of each.
var shapesAt = map[string][]shape{
	"default": {
		{Name: "S2", Title: "headless-heavy, one namespace", ClusterIP: 1000, Headless: 10000, Endpoints: 10, Updates: 250000},
		{Name: "S4", Title: "fat services", Headless: 1000, Endpoints: 100, PerNamespace: 100, Updates: 70000},
	},
	"small": {
		{Name: "S2", Title: "headless-heavy, one namespace", ClusterIP: 100, Headless: 1000, Endpoints: 10, Updates: 25000},
		{Name: "S4", Title: "fat services", Headless: 100, Endpoints: 100, PerNamespace: 100, Updates: 7000},
	},
}

// Address plan, bench's: endpoints from 10.64.0.0, addresses written by
// updates from 10.128.0.0, ClusterIPs from 10.96.0.0.
var (
	endpointBase  = netip.MustParseAddr("10.64.0.0")
	updateBase    = netip.MustParseAddr("10.128.0.0")
	clusterIPBase = netip.MustParseAddr("10.96.0.0")
)

// servicePorts are bench's: two named TCP ports.
var servicePorts = []corev1.ServicePort{
	{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
	{Name: "grpc", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)},
}

const (
	managedBy = "endpointslice-controller.k8s.io"
	// sliceFields is the endpointslice-controller's managedFields entry.
	sliceFields = `{"f:addressType":{},"f:endpoints":{},` +
		`"f:metadata":{"f:annotations":{".":{},"f:endpoints.kubernetes.io/last-change-trigger-time":{}},"f:generateName":{},` +
		`"f:labels":{".":{},"f:endpointslice.kubernetes.io/managed-by":{},"f:kubernetes.io/service-name":{}},` +
		`"f:ownerReferences":{".":{},"k:{\"uid\":\"%s\"}":{}}},"f:ports":{}}`
	serviceFields = `{"f:spec":{"f:clusterIP":{},"f:internalTrafficPolicy":{},"f:ports":{".":{},` +
		`"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}},` +
		`"k:{\"port\":9090,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},` +
		`"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}`
)

// created is when every object was created: an hour before the run.
var created = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))

// uid is a stable UID for an object.
func uid(kind string, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", hash32(kind), i))
}

func hash32(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// cluster is a shape's objects in their initial state, numbered with
// resourceVersions as etcd would, and the updates to feed.
type cluster struct {
	shape      shape
	namespaces []*corev1.Namespace
	services   []*corev1.Service
	slices     []*discoveryv1.EndpointSlice // by service number
	headless   []int                        // service numbers of the headless services
	// baseRV is the resourceVersion of the initial state; update k has
	// baseRV+1+k.
	baseRV  int64
	updates []update
}

// update is one address change: endpoint Endpoint of service Service
// takes Addr.
type update struct {
	Service, Endpoint int
	Addr              uint32
}

func newCluster(s shape) *cluster {
	c := &cluster{shape: s}
	rv := int64(1000)
	next := func() string { rv++; return fmt.Sprint(rv) }
	for i, ns := range s.namespaces() {
		c.namespaces = append(c.namespaces, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: ns, UID: uid("namespace", i), ResourceVersion: next(), CreationTimestamp: created,
				Labels: map[string]string{corev1.LabelMetadataName: ns}},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	for i := range s.services() {
		c.services = append(c.services, c.service(i, next()))
		if s.isHeadless(i) {
			c.headless = append(c.headless, i)
		}
	}
	for i := range s.services() {
		addrs := make([]uint32, s.Endpoints)
		for j := range addrs {
			addrs[j] = dnsload.AddrNum(endpointBase) + uint32(i*s.Endpoints+j)
		}
		c.slices = append(c.slices, c.slice(i, addrs, next(), 1))
	}
	c.baseRV = rv
	return c
}

// service is service i as the API server stores it.
func (c *cluster) service(i int, rv string) *corev1.Service {
	s := c.shape
	name := s.serviceName(i)
	ip := dnsload.NumAddr(dnsload.AddrNum(clusterIPBase) + uint32(i+10))
	if s.isHeadless(i) {
		ip = corev1.ClusterIPNone
	}
	single, local := corev1.IPFamilyPolicySingleStack, corev1.ServiceInternalTrafficPolicyCluster
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace(i), UID: uid("service", i), ResourceVersion: rv,
			CreationTimestamp: created, Labels: map[string]string{"app": name},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", Time: &created, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(serviceFields)}}},
		Spec: corev1.ServiceSpec{Ports: servicePorts, Selector: map[string]string{"app": name}, ClusterIP: ip, ClusterIPs: []string{ip},
			Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy: &single, InternalTrafficPolicy: &local},
	}
}

// slice is service i's EndpointSlice with addrs, as the
// endpointslice-controller writes it.
func (c *cluster) slice(i int, addrs []uint32, rv string, generation int64) *discoveryv1.EndpointSlice {
	s := c.shape
	name, ns := s.serviceName(i), s.namespace(i)
	changed := metav1.NewTime(created.Add(time.Duration(generation) * time.Millisecond))
	yes, no := true, false
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05x", name, hash32(name)&0xfffff), GenerateName: name + "-", Namespace: ns,
			UID: uid("endpointslice", i), ResourceVersion: rv, Generation: generation, CreationTimestamp: created,
			Labels:      map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: changed.UTC().Format(time.RFC3339Nano)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: uid("service", i),
				Controller: &yes, BlockOwnerDeletion: &yes}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "discovery.k8s.io/v1", Time: &changed, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(fmt.Sprintf(sliceFields, uid("service", i)))}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, p := range servicePorts {
		sl.Ports = append(sl.Ports, discoveryv1.EndpointPort{Name: &p.Name, Protocol: &p.Protocol, Port: &p.TargetPort.IntVal})
	}
	for j, a := range addrs {
		node, zone := fmt.Sprintf("node-%03d", (i+j)%100), fmt.Sprintf("zone-%c", 'a'+(i+j)%3)
		pod := fmt.Sprintf("%s-%d", name, j)
		e := discoveryv1.Endpoint{
			Addresses:  []string{dnsload.NumAddr(a)},
			Conditions: discoveryv1.EndpointConditions{Ready: &yes, Serving: &yes, Terminating: &no},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, UID: uid("pod", i*s.Endpoints+j)},
			NodeName:   &node, Zone: &zone,
		}
		if s.isHeadless(i) { // StatefulSet-style hostnames
			e.Hostname = &pod
		}
		sl.Endpoints = append(sl.Endpoints, e)
	}
	return sl
}

// plan draws n updates: each picks a headless service at random and
// replaces one endpoint's address (endpoint seq mod Endpoints, as bench's
// churn does) with a new one.
func (c *cluster) plan(n int) {
	r := rand.New(rand.NewPCG(20, 3))
	seq := make(map[int]int)
	for k := range n {
		i := c.headless[r.IntN(len(c.headless))]
		j := seq[i] % c.shape.Endpoints
		seq[i]++
		c.updates = append(c.updates, update{Service: i, Endpoint: j, Addr: dnsload.AddrNum(updateBase) + uint32(k)})
	}
}
