package watchcache

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestServiceExternalIPs: spec.externalIPs then the load balancer's
// ingress IPs, hostname-only ingresses and unparsable entries dropped, and
// nil (no allocation) for a service with none.
func TestServiceExternalIPs(t *testing.T) {
	lb := func(ingress ...corev1.LoadBalancerIngress) corev1.ServiceStatus {
		return corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}}
	}
	for _, tc := range []struct {
		name   string
		spec   []string
		status corev1.ServiceStatus
		want   []netip.Addr
	}{
		{name: "none"},
		{name: "spec", spec: []string{"192.0.2.1", "2001:db8::1"}, want: addrs("192.0.2.1", "2001:db8::1")},
		{name: "both in order", spec: []string{"192.0.2.1"}, status: lb(corev1.LoadBalancerIngress{IP: "198.51.100.7"}),
			want: addrs("192.0.2.1", "198.51.100.7")},
		{name: "hostname only", status: lb(corev1.LoadBalancerIngress{Hostname: "lb.example.net"})},
		{name: "unparsable", spec: []string{"not-an-ip"}},
		{name: "mapped", spec: []string{"::ffff:192.0.2.9"}, want: addrs("192.0.2.9")},
	} {
		svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.5", ExternalIPs: tc.spec}, Status: tc.status}
		out, err := toService(svc)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := out.(*Service).ExternalIPs()
		if !slices.Equal(got, tc.want) || (tc.want == nil && got != nil) {
			t.Errorf("%s: ExternalIPs %v, want %v", tc.name, got, tc.want)
		}
	}
}
