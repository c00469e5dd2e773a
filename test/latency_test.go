package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProgrammingLatencyRecordedForEveryServiceKind changes one service of
// each kind through the API and checks that the programming latency
// histogram (API change to new answer served) counted each kind.
func TestProgrammingLatencyRecordedForEveryServiceKind(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.namespace("latency")
	s := startServer(t, fmt.Sprintf(".:0 {\n bind 127.0.0.1\n kubeschema cluster.local {\n  kubeconfig %s\n }\n}\n", e.kubeconfig))
	before := programmingCounts(t, "kubeschema")

	port := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	svcs := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "cip"}, Spec: corev1.ServiceSpec{Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hsel"}, Spec: corev1.ServiceSpec{ClusterIP: "None", Selector: map[string]string{"a": "b"}, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hnosel"}, Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"}},
	}
	for _, svc := range svcs {
		e.createService(ns, svc)
	}
	for _, name := range []string{"hsel", "hnosel"} {
		ready := true
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.250.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		}
		e.createSlice(ns, sl)
	}
	for _, name := range []string{"cip", "hsel", "hnosel", "ext"} {
		qname := name + "." + ns + ".svc.cluster.local."
		eventually(t, 10*time.Second, qname+" served", func() bool {
			r := s.exchange(t, "udp", qname, dns.TypeA)
			return r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0
		})
	}
	after := programmingCounts(t, "kubeschema")
	for _, kind := range []string{"cluster_ip", "headless_with_selector", "headless_without_selector", "external_name"} {
		if after[kind] <= before[kind] {
			t.Errorf("programming latency for %s: %d observations before, %d after", kind, before[kind], after[kind])
		}
	}
}
