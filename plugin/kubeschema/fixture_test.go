package kubeschema

import (
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache/watchcachetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// memSource is the shared in-memory source (watchcachetest); the
// integration tests in test/ use the real cache and API server.
type memSource = watchcachetest.Source

func ptr[T any](v T) *T { return &v }

func service(ns, name string, mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	mutate(s)
	return s
}

func clusterIP(ips ...string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = ips[0], ips
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80},
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
			{Protocol: corev1.ProtocolTCP, Port: 8080}, // unnamed: no SRV
		}
	}
}

func headless(ports ...corev1.ServicePort) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
		s.Spec.Ports = ports
	}
}

type ep struct {
	addr, host, pod string
	unready         bool
	terminating     bool
}

func slice(ns, name, svc string, family discoveryv1.AddressType, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr(int32(8080))}},
	}
	for _, e := range eps {
		de := discoveryv1.Endpoint{Addresses: []string{e.addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(!e.unready), Terminating: ptr(e.terminating)}}
		if e.host != "" {
			de.Hostname = ptr(e.host)
		}
		if e.pod != "" {
			de.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: e.pod, Namespace: ns}
		}
		s.Endpoints = append(s.Endpoints, de)
	}
	return s
}

// fixture is a small cluster with one of every kind of service.
func fixture(t testing.TB) *memSource {
	m := &memSource{}
	m.Add(t,
		service("default", "kubernetes", clusterIP("10.96.0.1")),
		service("ns1", "web", clusterIP("10.96.0.10", "fd00:10:96::10")),
		service("ns1", "v6only", clusterIP("fd00:10:96::20")),
		service("ns1", "db", headless(corev1.ServicePort{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432})),
		slice("ns1", "db-v4", "db", discoveryv1.AddressTypeIPv4,
			ep{addr: "10.1.0.1", host: "db-0"}, ep{addr: "10.1.0.2", pod: "db-pod-1"}, ep{addr: "10.1.0.3", unready: true},
			ep{addr: "10.1.0.4", terminating: true}),
		slice("ns1", "db-v6", "db", discoveryv1.AddressTypeIPv6, ep{addr: "fd00::1", host: "db-0"}),
		service("ns1", "empty", headless()),
		service("ns1", "notready", func(s *corev1.Service) { headless()(s); s.Spec.PublishNotReadyAddresses = true }),
		slice("ns1", "notready-1", "notready", discoveryv1.AddressTypeIPv4, ep{addr: "10.1.1.1", unready: true}),
		service("ns1", "ext", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "web.ns1.svc.cluster.local"
		}),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p"}, Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.2.0.5"}}}},
	)
	return m
}
