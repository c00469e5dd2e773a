package test

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Whole-server tests of kubeschema's zone as a whole: changes reaching
// DNS, zone transfers, and fallthrough to the next plugin.

// TestKubeschemaChanges checks that updates reach DNS within changeTimeout: a
// new port, a deleted service, new endpoints, a deleted slice.
func TestKubeschemaChanges(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("changes")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, clusterIPService("svc", servicePort("http", corev1.ProtocolTCP, 80)))
	name, ip := ksSvc("svc", ns), svc.Spec.ClusterIP
	a := rrLine(name, "A", ip)
	srvHTTP := rrLine("_http._tcp."+name, "SRV", "0 100 80 "+name)
	expect(t, s, "udp", name, dns.TypeSRV, answer(srvHTTP).withExtra(a), settleTimeout)

	change := func(what string, do func(), cases ...dnsCase) {
		t.Helper()
		begin := time.Now()
		do()
		for _, c := range cases {
			expect(t, s, "udp", c.name, c.qtype, c.want, changeTimeout)
		}
		t.Logf("%s: seen in DNS after %s", what, time.Since(begin).Round(time.Millisecond))
	}
	srvGRPC := rrLine("_grpc._tcp."+name, "SRV", "0 100 9090 "+name)
	change("new port", func() {
		e.updateService(ns, "svc", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, servicePort("grpc", corev1.ProtocolTCP, 9090))
		})
	},
		dnsCase{"_grpc._tcp." + name, dns.TypeSRV, answer(srvGRPC).withExtra(a)},
		dnsCase{name, dns.TypeSRV, answer(srvHTTP, srvGRPC).withExtra(a)})
	change("deleted service", func() { e.deleteService(ns, "svc") },
		dnsCase{name, dns.TypeA, ksNXDOMAIN(clusterZone)},
		dnsCase{"_http._tcp." + name, dns.TypeSRV, ksNXDOMAIN(clusterZone)},
		dnsCase{ptrName(t, ip), dns.TypePTR, ksNXDOMAIN(reverse4Zone)})

	ports := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	e.createService(ns, headlessService("pool", servicePort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, endpointSlice("pool-1", "pool", ports, endpoint{addr: "10.244.3.1"}))
	pool := ksSvc("pool", ns)
	expect(t, s, "udp", pool, dns.TypeA, answer(rrLine(pool, "A", "10.244.3.1")), settleTimeout)
	change("new endpoint", func() { e.replaceEndpoints(ns, "pool-1", endpoint{addr: "10.244.3.1"}, endpoint{addr: "10.244.3.2"}) },
		dnsCase{pool, dns.TypeA, answer(rrLine(pool, "A", "10.244.3.1"), rrLine(pool, "A", "10.244.3.2"))},
		dnsCase{ptrName(t, "10.244.3.2"), dns.TypePTR, answer(rrLine(ptrName(t, "10.244.3.2"), "PTR", "10-244-3-2."+pool))})
	change("new slice", func() { e.createSlice(ns, endpointSlice("pool-2", "pool", ports, endpoint{addr: "fd00:10:244:3::3"})) },
		dnsCase{pool, dns.TypeAAAA, answer(rrLine(pool, "AAAA", "fd00:10:244:3::3"))})
	change("deleted slice", func() {
		if err := e.kube.DiscoveryV1().EndpointSlices(ns).Delete(e.ctx, "pool-1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete slice: %v", err)
		}
	},
		dnsCase{pool, dns.TypeA, ksNODATA(clusterZone)},
		dnsCase{ptrName(t, "10.244.3.1"), dns.TypePTR, ksNXDOMAIN(reverse4Zone)})
}

// TestKubeschemaTransfer checks an AXFR of cluster.local over TCP: SOA
// first and last, and the service's records in between.
func TestKubeschemaTransfer(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("axfr")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	name := ksSvc("web", ns)
	must := parseRRs([]string{
		rrLine(clusterZone, "NS", "ns.dns.cluster.local."),
		rrLine("ns.dns."+clusterZone, "A", "127.0.0.1"),
		rrLine("dns-version."+clusterZone, "TXT", `"1.1.0"`),
		rrLine(name, "A", svc.Spec.ClusterIP),
		rrLine("_http._tcp."+name, "SRV", "0 100 80 "+name),
	})
	var last string
	eventually(diffReport{t, &last}, settleTimeout, "AXFR of "+clusterZone+" with the service", func() bool {
		rrs, err := axfr(s, clusterZone)
		last = axfrProblem(rrs, err, ksSOA(clusterZone), must)
		return last == ""
	})
}

// TestKubeschemaFallthrough checks `fallthrough in-addr.arpa`: an unknown
// IPv4 PTR goes on down the chain (whoami answers it), a known one is
// answered by kubeschema, and other zones still get NXDOMAIN.
func TestKubeschemaFallthrough(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("fallthrough")
	s := e.server([]string{"pods verified", "fallthrough " + reverse4Zone}, "whoami")

	svc := e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	known := ptrName(t, svc.Spec.ClusterIP)
	checkAll(t, s, "udp", []dnsCase{
		{known, dns.TypePTR, answer(rrLine(known, "PTR", ksSvc("web", ns)))},
		{ptrName(t, "fd00:10:96::ffff"), dns.TypePTR, ksNXDOMAIN(reverse6Zone)},
		{"nope." + ns + ".svc." + clusterZone, dns.TypeA, ksNXDOMAIN(clusterZone)},
	})

	for _, name := range []string{ptrName(t, "10.250.0.1"), "example.org."} {
		r := s.exchange(t, "udp", name, dns.TypePTR)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 0 || len(r.Extra) != 2 {
			t.Errorf("%s PTR: want whoami's reply (NOERROR, two Additional records), got:\n%v", name, r)
			continue
		}
		if a, ok := r.Extra[0].(*dns.A); !ok || a.Hdr.Name != name || !a.A.Equal(net.IPv4(127, 0, 0, 1)) {
			t.Errorf("%s PTR: want whoami's A record of the client, got %v", name, r.Extra[0])
		}
	}
}
