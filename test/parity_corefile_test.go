package test

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// parityCorefile is a Corefile with every option shared with stock, as an operator
// writes it: k8s_external unchanged beside kubeschema, kubeschema with
// zonal names, client limits and reverse_cidrs, multicluster with its
// cluster ID, forward behind them. Only what puts it on loopback and on
// the test's API server is added (bind, port 0, kubeconfig, the upstream).
const parityCorefile = `.:0 {
    bind 127.0.0.1
    k8s_external example.org
    kubeschema cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
        startup_timeout 60s
        zonal
        apiserver_qps 50
        apiserver_burst 100
        apiserver_max_inflight 20
        reverse_cidrs auto 10.244.0.0/16
        fallthrough in-addr.arpa ip6.arpa
    }
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
        startup_timeout 60s
        cluster_id clustera
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . %[2]s
}
`

// TestParityCorefile starts parityCorefile and checks one answer of
// each of its parts, exactly: k8s_external's external IPs and apex, a
// zonal name, a free service address kept at home, an address outside the
// ranges passed on upstream, a service and the PreferClose import of
// clustera answered with clustera's endpoints while another cluster's
// host name stays answerable.
func TestParityCorefile(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("parity")
	upstream := startLeakUpstream(t)
	s := startServer(t, fmt.Sprintf(parityCorefile, e.kubeconfig, upstream))

	web := clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80))
	web.Spec.ExternalIPs = []string{"192.0.2.80"}
	webIP := clusterIPsOf(e.createService(ns, web))[0]
	e.createService(ns, headlessService("db", servicePort("pg", corev1.ProtocolTCP, 5432)))
	e.createSlice(ns, endpointSlice("db-1", "db", pgPorts,
		endpoint{addr: "10.244.80.1", zone: "zone-a"}, endpoint{addr: "10.244.80.2", zone: "zone-b"}))
	imp := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "cache"}, Spec: mcsv1beta1.ServiceImportSpec{
		Type: mcsv1beta1.Headless, TrafficDistribution: new("PreferClose"),
		Ports: []mcsv1beta1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}}}
	if _, err := e.mcs.MulticlusterV1beta1().ServiceImports(ns).Create(e.ctx, imp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createSlice(ns, mcSlice("cache-a", "cache", "clustera", pgPorts, endpoint{addr: "10.246.80.1", hostname: "c0"}))
	e.createSlice(ns, mcSlice("cache-b", "cache", "clusterb", pgPorts, endpoint{addr: "10.246.80.11", hostname: "c0"}))

	ext := extName("web", ns)
	pin := "zone-a.pin._zone." + ksSvc("db", ns)
	cache := mcSvc("cache", ns)
	checkAll(t, s, "udp", []dnsCase{
		{ksSvc("web", ns), dns.TypeA, answer(addrLine(ksSvc("web", ns), webIP))},
		{ext, dns.TypeA, answer(rrLine(ext, "A", "192.0.2.80"))},
		{extZone, dns.TypeSOA, answer(extSOA)},
		{pin, dns.TypeA, answer(addrLine(pin, "10.244.80.1"))},
		{ptrName(t, "10.96.255.254"), dns.TypePTR, ksNXDOMAIN(reverse4Zone)},
		{ptrName(t, "10.244.80.9"), dns.TypePTR, ksNXDOMAIN(reverse4Zone)},
		{ptrName(t, "192.0.2.1"), dns.TypePTR, answer(ptrName(t, "192.0.2.1") + " 60 IN PTR leaked.upstream.example.")},
		{cache, dns.TypeA, answer(addrLine(cache, "10.246.80.1"))},
		{"c0.clusterb." + cache, dns.TypeA, answer(addrLine("c0.clusterb."+cache, "10.246.80.11"))},
		mcPTR(t, "10.246.80.11", "c0.clusterb."+cache),
	})
}
