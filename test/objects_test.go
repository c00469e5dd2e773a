package test

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API objects the whole-server tests create, and the calls that
// create, change and delete them through the shared API server.

func (e *kubeEnv) createService(ns string, svc *corev1.Service) *corev1.Service {
	e.t.Helper()
	out, err := e.kube.CoreV1().Services(ns).Create(e.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create service %s/%s: %v", ns, svc.Name, err)
	}
	return out
}

// updateService applies change to the current version of the service.
func (e *kubeEnv) updateService(ns, name string, change func(*corev1.Service)) {
	e.t.Helper()
	svcs := e.kube.CoreV1().Services(ns)
	svc, err := svcs.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get service %s/%s: %v", ns, name, err)
	}
	change(svc)
	if _, err := svcs.Update(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update service %s/%s: %v", ns, name, err)
	}
}

func (e *kubeEnv) deleteService(ns, name string) {
	e.t.Helper()
	if err := e.kube.CoreV1().Services(ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete service %s/%s: %v", ns, name, err)
	}
}

func (e *kubeEnv) createSlice(ns string, s *discoveryv1.EndpointSlice) {
	e.t.Helper()
	if _, err := e.kube.DiscoveryV1().EndpointSlices(ns).Create(e.ctx, s, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create endpointslice %s/%s: %v", ns, s.Name, err)
	}
}

// replaceEndpoints gives the slice ns/name the endpoints eps.
func (e *kubeEnv) replaceEndpoints(ns, name string, eps ...endpoint) {
	e.t.Helper()
	api := e.kube.DiscoveryV1().EndpointSlices(ns)
	s, err := api.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get endpointslice %s/%s: %v", ns, name, err)
	}
	s.Endpoints = sliceEndpoints(eps)
	if _, err := api.Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update endpointslice %s/%s: %v", ns, name, err)
	}
}

// createPod creates a pod and gives it ips in its status: no kubelet runs.
func (e *kubeEnv) createPod(ns, name string, ips ...string) {
	e.t.Helper()
	pods := e.kube.CoreV1().Pods(ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}
	pod, err := pods.Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	pod.Status.PodIP = ips[0]
	for _, ip := range ips {
		pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if _, err := pods.UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("set pod %s/%s IPs: %v", ns, name, err)
	}
}

func (e *kubeEnv) deletePod(ns, name string) {
	e.t.Helper()
	if err := e.kube.CoreV1().Pods(ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
}

// Objects.

func servicePort(name string, proto corev1.Protocol, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: port}
}

// clusterIPService is a ClusterIP service (IPv4 single-stack unless changed).
func clusterIPService(name string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Ports: ports, Selector: map[string]string{"app": name}},
	}
}

// headlessService is a dual-stack headless service with a selector.
func headlessService(name string, ports ...corev1.ServicePort) *corev1.Service {
	svc := clusterIPService(name, ports...)
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyRequireDualStack)
	return svc
}

// endpoint is one endpoint of a slice.
type endpoint struct {
	addr, hostname, pod string
	unready             bool
	terminating         bool
	// zone is the endpoint's topology zone; "" for none.
	zone string
}

func slicePort(name string, proto corev1.Protocol, port int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: new(name), Protocol: new(proto), Port: new(port)}
}

// endpointSlice is an EndpointSlice of service svc; its address type is the
// family of the first endpoint.
func endpointSlice(name, svc string, ports []discoveryv1.EndpointPort, eps ...endpoint) *discoveryv1.EndpointSlice {
	at := discoveryv1.AddressTypeIPv4
	if len(eps) > 0 && strings.Contains(eps[0].addr, ":") {
		at = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: at,
		Ports:       ports,
		Endpoints:   sliceEndpoints(eps),
	}
}

func sliceEndpoints(eps []endpoint) []discoveryv1.Endpoint {
	out := make([]discoveryv1.Endpoint, 0, len(eps))
	for _, ep := range eps {
		e := discoveryv1.Endpoint{
			Addresses: []string{ep.addr},
			Conditions: discoveryv1.EndpointConditions{
				Ready:       new(!ep.unready),
				Serving:     new(!ep.unready || ep.terminating),
				Terminating: new(ep.terminating),
			},
		}
		if ep.hostname != "" {
			e.Hostname = new(ep.hostname)
		}
		if ep.pod != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: ep.pod}
		}
		if ep.zone != "" {
			e.Zone = new(ep.zone)
		}
		out = append(out, e)
	}
	return out
}

// clusterIPsOf returns the service's allocated cluster IPs, IPv4 first.
func clusterIPsOf(svc *corev1.Service) []string {
	ips := slices.Clone(svc.Spec.ClusterIPs)
	slices.SortFunc(ips, func(a, b string) int { return strings.Count(a, ":") - strings.Count(b, ":") })
	return ips
}
