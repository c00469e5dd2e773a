package test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Whole-server tests of kubeschema's records of endpoints and pods:
// headless services, which endpoints are served, pod records, and answers
// too large for UDP.

// TestKubeschemaHeadless checks a dual-stack headless service whose pods
// are in an IPv4 and an IPv6 slice, one address also in a third slice (as
// during a migration): merged and deduplicated address records, one name
// per hostname, N×M SRV records with the targets' addresses, and PTR. An
// endpoint without hostname is named by its dashed address, or with
// endpoint_pod_names by its pod.
func TestKubeschemaHeadless(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("headless")
	plainServer := e.server([]string{"pods verified"})
	podNamesServer := e.server([]string{"pods verified", "endpoint_pod_names"})

	e.createService(ns, headlessService("db", servicePort("http", corev1.ProtocolTCP, 80), servicePort("dns", corev1.ProtocolUDP, 53)))
	// Headless clients connect to the endpoints' ports, not the service's.
	ports := []discoveryv1.EndpointPort{
		slicePort("http", corev1.ProtocolTCP, 8080), slicePort("dns", corev1.ProtocolUDP, 5353),
	}
	// The IPv6 slice comes last: once DNS shows it, the others are seen
	// too (one watch delivers slices in order).
	e.createSlice(ns, endpointSlice("db-ipv4", "db", ports,
		endpoint{addr: "10.244.1.10", hostname: "pet-0", pod: "db-0"}, endpoint{addr: "10.244.1.11", pod: "db-1"}))
	e.createSlice(ns, endpointSlice("db-ipv4-moved", "db", ports, endpoint{addr: "10.244.1.11", pod: "db-1"}))
	e.createSlice(ns, endpointSlice("db-ipv6", "db", ports,
		endpoint{addr: "fd00:10:244:1::10", hostname: "pet-0", pod: "db-0"}, endpoint{addr: "fd00:10:244:1::11", pod: "db-1"}))

	svc := ksSvc("db", ns)
	pet0 := "pet-0." + svc
	for _, tc := range []struct {
		name string
		s    *server
		// hosts are the SRV targets besides pet-0, with their addresses.
		hosts map[string][]string
		// absent is a name that must not exist.
		absent string
	}{
		{"dashed address", plainServer,
			map[string][]string{"10-244-1-11." + svc: {"10.244.1.11"}, "fd00-10-244-1--11." + svc: {"fd00:10:244:1::11"}},
			"db-1." + svc},
		{"endpoint_pod_names", podNamesServer,
			map[string][]string{"db-1." + svc: {"10.244.1.11", "fd00:10:244:1::11"}},
			"10-244-1-11." + svc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			targets := map[string][]string{pet0: {"10.244.1.10", "fd00:10:244:1::10"}}
			maps.Copy(targets, tc.hosts)
			weight := fmt.Sprint(100 / len(targets))
			var srvHTTP, srvDNS, extra []string
			cases := []dnsCase{{svc, dns.TypeAAAA, answer(addrLine(svc, "fd00:10:244:1::10"), addrLine(svc, "fd00:10:244:1::11"))}}
			for host, ips := range targets {
				srvHTTP = append(srvHTTP, rrLine("_http._tcp."+svc, "SRV", "0 "+weight+" 8080 "+host))
				srvDNS = append(srvDNS, rrLine("_dns._udp."+svc, "SRV", "0 "+weight+" 5353 "+host))
				for _, ip := range ips {
					rr := addrLine(host, ip)
					extra = append(extra, rr)
					reverse := ptrName(t, ip)
					cases = append(cases,
						dnsCase{host, addrType(ip), answer(rr)},
						dnsCase{reverse, dns.TypePTR, answer(rrLine(reverse, "PTR", host))})
				}
			}
			cases = append(cases,
				dnsCase{svc, dns.TypeA, answer(addrLine(svc, "10.244.1.10"), addrLine(svc, "10.244.1.11"))},
				dnsCase{"_http._tcp." + svc, dns.TypeSRV, answer(srvHTTP...).withExtra(extra...)},
				dnsCase{"_dns._udp." + svc, dns.TypeSRV, answer(srvDNS...).withExtra(extra...)},
				dnsCase{svc, dns.TypeSRV, answer(append(slices.Clone(srvHTTP), srvDNS...)...).withExtra(extra...)},
				dnsCase{"_dns._tcp." + svc, dns.TypeSRV, ksNXDOMAIN(clusterZone)},
				dnsCase{tc.absent, dns.TypeA, ksNXDOMAIN(clusterZone)},
				dnsCase{"pet-1." + svc, dns.TypeA, ksNXDOMAIN(clusterZone)},
				dnsCase{ptrName(t, "10.244.1.12"), dns.TypePTR, ksNXDOMAIN(reverse4Zone)},
			)
			// Over TCP: the SRV answers with their Additional records
			// exceed the 512 bytes of UDP without EDNS.
			checkAll(t, tc.s, "tcp", cases)
		})
	}
}

// TestKubeschemaReadiness checks which endpoints are served: ready ones;
// unready ones too when the service publishes them (field or legacy
// annotation); never terminating ones; and a headless service left without
// ready endpoints is NXDOMAIN.
func TestKubeschemaReadiness(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("readiness")
	s := e.server([]string{"pods verified"})

	ports := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	headless := func(name string, change func(*corev1.Service), eps ...endpoint) string {
		svc := headlessService(name, servicePort("http", corev1.ProtocolTCP, 80))
		change(svc)
		e.createService(ns, svc)
		e.createSlice(ns, endpointSlice(name+"-1", name, ports, eps...))
		return ksSvc(name, ns)
	}
	plain := headless("plain", func(*corev1.Service) {},
		endpoint{addr: "10.244.2.1"}, endpoint{addr: "10.244.2.2", unready: true}, endpoint{addr: "10.244.2.3", unready: true, terminating: true})
	publish := headless("publish", func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true },
		// With publishNotReadyAddresses the controller marks every
		// endpoint ready, terminating ones included.
		endpoint{addr: "10.244.2.11"}, endpoint{addr: "10.244.2.12", unready: true}, endpoint{addr: "10.244.2.13", terminating: true})
	legacy := headless("legacy", func(s *corev1.Service) {
		s.Annotations = map[string]string{"service.alpha.kubernetes.io/tolerate-unready-endpoints": "true"}
	}, endpoint{addr: "10.244.2.21"}, endpoint{addr: "10.244.2.22", unready: true})
	draining := headless("draining", func(*corev1.Service) {}, endpoint{addr: "10.244.2.31", hostname: "last"})

	a := func(owner string, ips ...string) wantReply {
		var rrs []string
		for _, ip := range ips {
			rrs = append(rrs, addrLine(owner, ip))
		}
		return answer(rrs...)
	}
	checkAll(t, s, "udp", []dnsCase{
		{plain, dns.TypeA, a(plain, "10.244.2.1")},
		{"10-244-2-1." + plain, dns.TypeA, a("10-244-2-1."+plain, "10.244.2.1")},
		{"10-244-2-2." + plain, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{ptrName(t, "10.244.2.2"), dns.TypePTR, ksNXDOMAIN(reverse4Zone)},
		{publish, dns.TypeA, a(publish, "10.244.2.11", "10.244.2.12")},
		{"10-244-2-12." + publish, dns.TypeA, a("10-244-2-12."+publish, "10.244.2.12")},
		{"10-244-2-13." + publish, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{ptrName(t, "10.244.2.13"), dns.TypePTR, ksNXDOMAIN(reverse4Zone)},
		{legacy, dns.TypeA, a(legacy, "10.244.2.21", "10.244.2.22")},
		{draining, dns.TypeA, a(draining, "10.244.2.31")},
	})

	// The last endpoint becomes unready: the service leaves DNS.
	e.replaceEndpoints(ns, "draining-1", endpoint{addr: "10.244.2.31", hostname: "last", unready: true, terminating: true})
	for _, c := range []dnsCase{
		{draining, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{draining, dns.TypeSRV, ksNXDOMAIN(clusterZone)},
		{"last." + draining, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{"_http._tcp." + draining, dns.TypeSRV, ksNXDOMAIN(clusterZone)},
		{ptrName(t, "10.244.2.31"), dns.TypePTR, ksNXDOMAIN(reverse4Zone)},
	} {
		expect(t, s, "udp", c.name, c.qtype, c.want, changeTimeout)
	}
	// And comes back when an endpoint is ready again.
	e.replaceEndpoints(ns, "draining-1", endpoint{addr: "10.244.2.32", hostname: "next"})
	expect(t, s, "udp", "next."+draining, dns.TypeA, a("next."+draining, "10.244.2.32"), changeTimeout)
}

// TestKubeschemaPods checks <dashed-ip>.<ns>.pod.<zone> in the three pods
// modes: verified answers only for a pod with that address in that
// namespace, insecure for any address, disabled never.
func TestKubeschemaPods(t *testing.T) {
	e := newKsEnv(t)
	ns, other := e.namespace("pods"), e.namespace("pods-other")
	verified := e.server([]string{"pods verified"})
	insecure := e.server([]string{"pods insecure"})
	disabled := e.server([]string{"pods disabled"})

	e.createPod(ns, "p", "10.245.0.5", "fd00:10:245::5")
	podName := func(label, namespace string) string { return label + "." + namespace + ".pod." + clusterZone }
	v4, v6 := podName("10-245-0-5", ns), podName("fd00-10-245--5", ns)
	checkAll(t, verified, "udp", []dnsCase{
		{v4, dns.TypeA, answer(rrLine(v4, "A", "10.245.0.5"))},
		{v4, dns.TypeAAAA, ksNODATA(clusterZone)},
		{v6, dns.TypeAAAA, answer(rrLine(v6, "AAAA", "fd00:10:245::5"))},
		{podName("10-245-0-5", other), dns.TypeA, ksNXDOMAIN(clusterZone)},
		{podName("10-245-0-6", ns), dns.TypeA, ksNXDOMAIN(clusterZone)},
		{ns + ".pod." + clusterZone, dns.TypeA, ksNODATA(clusterZone)},
		{podName("not-an-ip", ns), dns.TypeA, ksNXDOMAIN(clusterZone)},
	})
	unknown := podName("10-245-0-6", other)
	checkAll(t, insecure, "udp", []dnsCase{
		{v4, dns.TypeA, answer(rrLine(v4, "A", "10.245.0.5"))},
		{unknown, dns.TypeA, answer(rrLine(unknown, "A", "10.245.0.6"))},
	})
	checkAll(t, disabled, "udp", []dnsCase{
		{"dns-version." + clusterZone, dns.TypeTXT, answer(rrLine("dns-version."+clusterZone, "TXT", `"1.1.0"`))},
		{v4, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{unknown, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{ns + ".pod." + clusterZone, dns.TypeA, ksNXDOMAIN(clusterZone)},
	})

	e.deletePod(ns, "p")
	expect(t, verified, "udp", v4, dns.TypeA, ksNXDOMAIN(clusterZone), changeTimeout)
}

// TestKubeschemaLargeAnswer checks a headless service with 60 ready
// endpoints: over UDP without EDNS the answer is truncated (TC), over TCP
// it is whole; and successive answers rotate their records.
func TestKubeschemaLargeAnswer(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("large")
	s := e.server([]string{"pods verified"})

	const n = 60
	e.createService(ns, headlessService("many", servicePort("http", corev1.ProtocolTCP, 80)))
	var eps []endpoint
	var want []string
	name := ksSvc("many", ns)
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("10.244.4.%d", i)
		eps = append(eps, endpoint{addr: ip})
		want = append(want, rrLine(name, "A", ip))
	}
	e.createSlice(ns, endpointSlice("many-1", "many", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}, eps...))
	expect(t, s, "tcp", name, dns.TypeA, answer(want...), settleTimeout)

	expectTruncatedOverUDP(t, s, name, n)
	if m, err := exchangeEDNS(s, name, dns.TypeA, 4096); err != nil || m.Truncated || len(m.Answer) != n {
		t.Errorf("A over UDP with a 4096-byte EDNS buffer: want all %d records untruncated, got %v", n, replySummary(m, err))
	}
	expectRotated(t, s, name, n)
}
