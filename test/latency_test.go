package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/kubeapi"
)

// TestProgrammingLatencyRecordedForEveryServiceKind changes one service of
// each kind through the API and checks that the programming latency
// histogram (API change to new answer served) counted each kind.
func TestProgrammingLatencyRecordedForEveryServiceKind(t *testing.T) {
	c := kubeapi.Shared(t)
	ctx := context.Background()
	ns := "latency-test"
	cs := c.Client()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, fmt.Sprintf(".:0 {\n bind 127.0.0.1\n kubeschema cluster.local {\n  kubeconfig %s\n }\n}\n", c.Kubeconfig))
	before := programmedCounts(t)

	port := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	svcs := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "cip"}, Spec: corev1.ServiceSpec{Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hsel"}, Spec: corev1.ServiceSpec{ClusterIP: "None", Selector: map[string]string{"a": "b"}, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hnosel"}, Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"}},
	}
	for _, svc := range svcs {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"hsel", "hnosel"} {
		ready := true
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.250.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		}
		if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"cip", "hsel", "hnosel", "ext"} {
		qname := name + "." + ns + ".svc.cluster.local."
		eventually(t, 10*time.Second, qname+" served", func() bool {
			r := s.exchange(t, "udp", qname, dns.TypeA)
			return r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0
		})
	}
	after := programmedCounts(t)
	for _, kind := range []string{"cluster_ip", "headless_with_selector", "headless_without_selector", "external_name"} {
		if after[kind] <= before[kind] {
			t.Errorf("programming latency for %s: %d observations before, %d after", kind, before[kind], after[kind])
		}
	}
}

// programmedCounts reads coredns_kubeschema_dns_programming_duration_seconds
// sample counts by service_kind from the default registry.
func programmedCounts(t *testing.T) map[string]uint64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "coredns_kubeschema_dns_programming_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "service_kind" {
					out[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}
