package clustershape

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// LabelShape is on every object of a shape, its value the shape's name.
const LabelShape = "clustershape.schemadns.io/shape"

// ManagedBy is the endpointslice.kubernetes.io/managed-by label of the
// slices: not the EndpointSlice controller's, which leaves them alone.
const ManagedBy = "clustershape.schemadns.io"

// The address ranges, data only: pods from podV4 and podV6, endpoints that
// no pod has from unownedV4 and unownedV6, numbered from each start
// (maxAddresses each, all inside 100.64.0.0/10 and fd00:100:64::/48).
var (
	podV4     = netip.MustParseAddr("100.64.0.0")
	unownedV4 = netip.MustParseAddr("100.80.0.0")
	podV6     = netip.MustParseAddr("fd00:100:64:1::")
	unownedV6 = netip.MustParseAddr("fd00:100:64:2::")
)

// nth is the address n after base.
func nth(base netip.Addr, n int) netip.Addr {
	if base.Is4() {
		b := base.As4()
		var out [4]byte
		binary.BigEndian.PutUint32(out[:], binary.BigEndian.Uint32(b[:])+uint32(n))
		return netip.AddrFrom4(out)
	}
	b := base.As16()
	binary.BigEndian.PutUint64(b[8:], binary.BigEndian.Uint64(b[8:])+uint64(n))
	return netip.AddrFrom16(b)
}

// Namespace is the name of namespace n (0 to Namespaces-1).
func (l *Layout) Namespace(n int) string { return fmt.Sprintf("%s-%02d", l.shape.Name, n) }

// NamespaceObject is namespace n as an object.
func (l *Layout) NamespaceObject(n int) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(n), Labels: l.labels(nil)}}
}

func (l *Layout) labels(extra map[string]string) map[string]string {
	out := map[string]string{LabelShape: l.shape.Name}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// ServiceName is the name of service i, after its kind: web-…
// (ClusterIP), db-… (headless) or ext-… (ExternalName).
func (l *Layout) ServiceName(i int) string {
	prefix := [...]string{clusterIP: "web", headless: "db", externalName: "ext"}[l.svcs[i].kind]
	return fmt.Sprintf("%s-%05d", prefix, i)
}

// Service is service i (0 to Counts().Services-1). A ClusterIP or
// dual-stack service's addresses are the API server's to allocate.
func (l *Layout) Service(i int) *corev1.Service {
	v := l.svcs[i]
	name := l.ServiceName(i)
	labels := map[string]string{"app": name}
	if l.shape.ProxyName != "" {
		labels["service.kubernetes.io/service-proxy-name"] = l.shape.ProxyName
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.Namespace(int(v.ns)), Labels: l.labels(labels)},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP},
	}
	for _, p := range servicePorts[:v.ports] {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.name, Port: p.port,
			TargetPort: intstr.FromInt32(p.target), Protocol: corev1.ProtocolTCP})
	}
	switch v.kind {
	case headless:
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	case externalName:
		svc.Spec.Type = corev1.ServiceTypeExternalName
		svc.Spec.ExternalName = name + ".example.com"
	}
	if v.dual {
		// PreferDualStack: both families on a dual-stack cluster, the
		// cluster's one on a single-stack cluster.
		policy := corev1.IPFamilyPolicyPreferDualStack
		svc.Spec.IPFamilyPolicy = &policy
	}
	return svc
}

// servicePorts are a service's ports: the first, or both.
var servicePorts = []struct {
	name         string
	port, target int32
}{{"http", 80, 8080}, {"metrics", 9090, 9090}}

// Slices are service i's EndpointSlices, as the EndpointSlice controller
// would write them: at most MaxEndpointsPerSlice endpoints each, one set
// per address family; none for an ExternalName service.
func (l *Layout) Slices(i int) []*discoveryv1.EndpointSlice {
	v := l.svcs[i]
	families := []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	if v.dual {
		families = append(families, discoveryv1.AddressTypeIPv6)
	}
	var out []*discoveryv1.EndpointSlice
	for _, family := range families {
		for from := 0; from < int(v.endpoints); from += MaxEndpointsPerSlice {
			sl := l.slice(i, family, from/MaxEndpointsPerSlice)
			for j := from; j < min(int(v.endpoints), from+MaxEndpointsPerSlice); j++ {
				sl.Endpoints = append(sl.Endpoints, l.endpoint(i, j, family))
			}
			out = append(out, sl)
		}
	}
	return out
}

// slice is service i's k-th slice of a family, without endpoints.
func (l *Layout) slice(i int, family discoveryv1.AddressType, k int) *discoveryv1.EndpointSlice {
	v := l.svcs[i]
	name := l.ServiceName(i)
	labels := map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ManagedBy}
	if v.kind == headless {
		labels[corev1.IsHeadlessService] = ""
	}
	suffix := "v4"
	if family == discoveryv1.AddressTypeIPv6 {
		suffix = "v6"
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", name, suffix, k), Namespace: l.Namespace(int(v.ns)), Labels: l.labels(labels)},
		AddressType: family,
	}
	for _, p := range servicePorts[:v.ports] {
		name, port, proto := p.name, p.target, corev1.ProtocolTCP
		sl.Ports = append(sl.Ports, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto})
	}
	return sl
}

// endpoint is endpoint j of service i in a family: its pod's address
// and a reference to it, or an address no pod has.
func (l *Layout) endpoint(i, j int, family discoveryv1.AddressType) discoveryv1.Endpoint {
	v := l.svcs[i]
	yes, no := true, false
	ep := discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: &yes, Serving: &yes, Terminating: &no}}
	slot := int(v.firstSlot) + j
	pods := l.shape.PodsPerNamespace
	var addr netip.Addr
	if slot < pods {
		pod := int(v.ns)*pods + slot
		addr = nth(podV4, pod)
		if family == discoveryv1.AddressTypeIPv6 {
			addr = nth(podV6, pod)
		}
		ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: l.Namespace(int(v.ns)), Name: l.podName(i, j)}
	} else {
		k := int(v.unowned) + slot - max(int(v.firstSlot), pods)
		addr = nth(unownedV4, k)
		if family == discoveryv1.AddressTypeIPv6 {
			addr = nth(unownedV6, k)
		}
	}
	ep.Addresses = []string{addr.String()}
	if v.kind == headless {
		host := l.podName(i, j)
		ep.Hostname = &host
	}
	return ep
}

// podName is the name of the pod behind endpoint j of service i, as a
// StatefulSet would name it (its hostname in a headless service).
func (l *Layout) podName(i, j int) string { return fmt.Sprintf("%s-%d", l.ServiceName(i), j) }

// Pod is pod i (0 to Counts().Pods-1) with its status: phase Running,
// ready, its addresses (both families when it backs a dual-stack
// service). The API server drops the status of a pod created; Load writes
// it through the status subresource, as a kubelet would.
func (l *Layout) Pod(i int) *corev1.Pod {
	ns, slot := i/l.shape.PodsPerNamespace, i%l.shape.PodsPerNamespace
	name, app := fmt.Sprintf("idle-%05d", slot), "idle"
	svc, j, owned := l.podOwner(ns, slot)
	if owned {
		name, app = l.podName(svc, j), l.ServiceName(svc)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.Namespace(ns), Labels: l.labels(map[string]string{"app": app})},
		Spec: corev1.PodSpec{
			SchedulerName: l.shape.SchedulerName,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
			}},
		},
	}
	if owned && l.svcs[svc].kind == headless {
		pod.Spec.Hostname, pod.Spec.Subdomain = name, app
	}
	ips := []corev1.PodIP{{IP: nth(podV4, i).String()}}
	if owned && l.svcs[svc].dual {
		ips = append(ips, corev1.PodIP{IP: nth(podV6, i).String()})
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		},
		PodIP:  ips[0].IP,
		PodIPs: ips,
	}
	return pod
}
