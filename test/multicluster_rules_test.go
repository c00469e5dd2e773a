package test

import (
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// Whole-server tests of multicluster's rules: what it does with bad input,
// and which reverse names it answers next to kubeschema.

// TestMulticlusterBadInput checks the README's rules for bad input: a
// ClusterSetIP import without IPs is not served until it has some, an
// unnamed port has no SRV record, a slice without a source cluster or with
// a cluster ID that is not a DNS label is skipped, a cluster ID is lower
// cased, and an address two clusters claim is served once, from the
// cluster first in name order.
func TestMulticlusterBadInput(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("badinput")
	s := e.server(mcCorefile)

	e.createImport(ns, mcClusterSetIP("noips", nil, mcPort("http", corev1.ProtocolTCP, 80)))
	e.createImport(ns, mcClusterSetIP("unnamed", []string{"10.247.4.20"}, mcPort("", corev1.ProtocolTCP, 8080)))
	e.createImport(ns, mcHeadless("mixed", mcPort("http", "", 80))) // no protocol: TCP
	ports := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	e.createSlice(ns, mcSlice("mixed-nocluster", "mixed", "", ports, endpoint{addr: "10.246.4.20", hostname: "h"}))
	e.createSlice(ns, mcSlice("mixed-badid", "mixed", "cluster_c", ports, endpoint{addr: "10.246.4.30", hostname: "h"}))
	e.createSlice(ns, mcSlice("mixed-b", "mixed", "cluster-b", ports, endpoint{addr: "10.246.4.10", hostname: "h2"}))
	e.createSlice(ns, mcSlice("mixed-a", "mixed", "cluster-a", ports, endpoint{addr: "10.246.4.10", hostname: "h"}))
	e.createSlice(ns, mcSlice("mixed-d", "mixed", "Cluster-D", ports, endpoint{addr: "10.246.4.40", hostname: "d"}))

	unnamed, mixed := mcSvc("unnamed", ns), mcSvc("mixed", ns)
	hA, dD := "h.cluster-a."+mixed, "d.cluster-d."+mixed
	checkAll(t, s, "udp", []dnsCase{
		{mcSvc("noips", ns), dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{"_http._tcp." + mcSvc("noips", ns), dns.TypeSRV, mcNXDOMAIN(clustersetZone)},
		{unnamed, dns.TypeA, answer(rrLine(unnamed, "A", "10.247.4.20"))},
		{unnamed, dns.TypeSRV, mcNODATA(clustersetZone)},
		{"_tcp." + unnamed, dns.TypeSRV, mcNXDOMAIN(clustersetZone)},
		{mixed, dns.TypeA, answer(addrLine(mixed, "10.246.4.10"), addrLine(mixed, "10.246.4.40"))},
		{hA, dns.TypeA, answer(addrLine(hA, "10.246.4.10"))},
		{"h2.cluster-b." + mixed, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{dD, dns.TypeA, answer(addrLine(dD, "10.246.4.40"))},
		{"_http._tcp." + mixed, dns.TypeSRV, mcSRVWant([]string{
			rrLine("_http._tcp."+mixed, "SRV", "0 50 8080 "+hA), rrLine("_http._tcp."+mixed, "SRV", "0 50 8080 "+dD),
		}, map[string][]string{hA: {"10.246.4.10"}, dD: {"10.246.4.40"}})},
		mcPTR(t, "10.246.4.10", hA),
		{ptrName(t, "10.246.4.20"), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
		{ptrName(t, "10.246.4.30"), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
	})

	// Once the import has an IP, it is served.
	e.updateImport(ns, "noips", func(imp *mcsv1alpha1.ServiceImport) { imp.Spec.IPs = []string{"10.247.4.10"} })
	expect(t, s, "udp", mcSvc("noips", ns), dns.TypeA, answer(rrLine(mcSvc("noips", ns), "A", "10.247.4.10")), changeTimeout)
}

// TestMulticlusterReverse runs the recommended Corefile: kubeschema and
// multicluster both serve the reverse zones, kubeschema falls through for
// addresses it does not own. An address with a cluster-local PTR record
// (a "dummy" Service holding the clusterset IP, a local headless
// endpoint) keeps it; a clusterset-only address gets multicluster's. A
// server with multicluster alone follows the same rule (no PTR for a
// locally named address), and the rule follows the local objects as they
// change.
func TestMulticlusterReverse(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("reverse")
	both := e.server(mcCorefile)
	alone := e.server(mcAloneCorefile)

	dummy := e.createService(ns, clusterIPService("dummy", servicePort("http", corev1.ProtocolTCP, 80)))
	dummyIP := dummy.Spec.ClusterIP
	e.createImport(ns, mcClusterSetIP("shared", []string{dummyIP}, mcPort("http", corev1.ProtocolTCP, 80)))
	e.createImport(ns, mcClusterSetIP("remote", []string{"10.247.6.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	ports := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	e.createService(ns, headlessService("db", servicePort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, endpointSlice("db-local", "db", ports, endpoint{addr: "10.246.6.10", hostname: "pet-0"}))
	e.createImport(ns, mcHeadless("db", mcPort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, mcSlice("db-here", "db", "cluster-here", ports, endpoint{addr: "10.246.6.10", hostname: "pet-0"}))
	e.createSlice(ns, mcSlice("db-b", "db", "cluster-b", ports, endpoint{addr: "10.246.6.20", hostname: "pet-0"}))

	shared, remote := mcSvc("shared", ns), mcSvc("remote", ns)
	localDB, remoteDB := "pet-0."+svcName("db", ns, clusterZone), "pet-0.cluster-b."+mcSvc("db", ns)
	checkAll(t, both, "udp", []dnsCase{
		// The records multicluster serves for these addresses exist...
		{shared, dns.TypeA, answer(rrLine(shared, "A", dummyIP))},
		{"pet-0.cluster-here." + mcSvc("db", ns), dns.TypeA, answer(rrLine("pet-0.cluster-here."+mcSvc("db", ns), "A", "10.246.6.10"))},
		// ...and the cluster-local PTR wins; others come from multicluster.
		mcPTR(t, dummyIP, svcName("dummy", ns, clusterZone)),
		mcPTR(t, "10.246.6.10", localDB),
		mcPTR(t, "10.247.6.10", remote),
		mcPTR(t, "10.246.6.20", remoteDB),
		// Owned by neither: multicluster's NXDOMAIN, after kubeschema fell through.
		{ptrName(t, "10.247.6.99"), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
		{ptrName(t, "fd00:10:247:6::99"), dns.TypePTR, mcNXDOMAIN(reverse6Zone)},
	})
	checkAll(t, alone, "udp", []dnsCase{
		{ptrName(t, dummyIP), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
		{ptrName(t, "10.246.6.10"), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
		mcPTR(t, "10.247.6.10", remote),
		mcPTR(t, "10.246.6.20", remoteDB),
	})

	// The dummy Service and the local slice go: the imports' PTR records
	// are multicluster's now, on both servers.
	e.deleteService(ns, "dummy")
	if err := e.kube.DiscoveryV1().EndpointSlices(ns).Delete(e.ctx, "db-local", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete slice: %v", err)
	}
	for _, s := range []*server{both, alone} {
		expect(t, s, "udp", ptrName(t, dummyIP), dns.TypePTR, mcPTR(t, dummyIP, shared).want, changeTimeout)
		expect(t, s, "udp", ptrName(t, "10.246.6.10"), dns.TypePTR,
			mcPTR(t, "10.246.6.10", "pet-0.cluster-here."+mcSvc("db", ns)).want, changeTimeout)
	}
}
