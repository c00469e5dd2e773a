package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/schemadns/schemadns/internal/kubeapi"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

// Whole-server tests of the multicluster plugin: ServiceImports and the
// EndpointSlices of member clusters are created through the real API
// server (with the MCS CRDs installed), and the answers read back over UDP
// and TCP, compared exactly (dnscheck_test.go). Each test works in
// namespaces of its own and uses addresses no other test uses: endpoints
// 10.246.<test>.x and fd00:10:246:<test>::x, clusterset IPs 10.247.<test>.x
// and fd00:10:247:<test>::x.
//
// The tests are in four files: the records of imports (this one), the
// rules for bad input and for reverse names shared with kubeschema
// (multicluster_rules_test.go), the cache shared with kubeschema and
// the metrics (multicluster_cache_test.go), and the API versions, the
// cluster ID, PreferClose and ipFamilies, against API servers of their own
// (multicluster_locality_test.go).

// mcEnv is one test's access to the shared API server, with the MCS client.
type mcEnv struct {
	*kubeEnv
	mcs mcsclient.Interface
}

func newMcEnv(t *testing.T) *mcEnv {
	t.Helper()
	c := kubeapi.Shared(t)
	mcs, err := mcsclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatalf("MCS client: %v", err)
	}
	return &mcEnv{kubeEnv: newKubeEnv(t), mcs: mcs}
}

// namespace creates a namespace whose imports, slices and services are
// deleted when the test ends (imports first: cleanups run in reverse).
func (e *mcEnv) namespace(prefix string) string {
	e.t.Helper()
	ns := e.kubeEnv.namespace("mc-" + prefix)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := e.mcs.MulticlusterV1alpha1().ServiceImports(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil {
			e.t.Logf("delete the imports of %s: %v", ns, err)
		}
	})
	return ns
}

// mcCorefile is the recommended Corefile: kubeschema and multicluster in one
// server block, both serving the reverse zones, kubeschema falling through
// for addresses it does not own; transfers allowed.
const mcCorefile = `.:0 {
    bind 127.0.0.1
    kubeschema cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
        startup_timeout 60s
        fallthrough in-addr.arpa ip6.arpa
    }
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
        startup_timeout 60s
    }
    transfer {
        to *
    }
}
`

// mcAloneCorefile serves multicluster without kubeschema.
const mcAloneCorefile = `.:0 {
    bind 127.0.0.1
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
        startup_timeout 60s
    }
}
`

func (e *mcEnv) server(corefile string) *server {
	e.t.Helper()
	return startServer(e.t, fmt.Sprintf(corefile, e.kubeconfig))
}

func (e *mcEnv) createImport(ns string, imp *mcsv1alpha1.ServiceImport) {
	e.t.Helper()
	if _, err := e.mcs.MulticlusterV1alpha1().ServiceImports(ns).Create(e.ctx, imp, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create serviceimport %s/%s: %v", ns, imp.Name, err)
	}
}

// updateImport applies change to the current version of the import.
func (e *mcEnv) updateImport(ns, name string, change func(*mcsv1alpha1.ServiceImport)) {
	e.t.Helper()
	api := e.mcs.MulticlusterV1alpha1().ServiceImports(ns)
	imp, err := api.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get serviceimport %s/%s: %v", ns, name, err)
	}
	change(imp)
	if _, err := api.Update(e.ctx, imp, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update serviceimport %s/%s: %v", ns, name, err)
	}
}

// Objects.

func mcPort(name string, proto corev1.Protocol, port int32) mcsv1alpha1.ServicePort {
	return mcsv1alpha1.ServicePort{Name: name, Protocol: proto, Port: port}
}

func mcClusterSetIP(name string, ips []string, ports ...mcsv1alpha1.ServicePort) *mcsv1alpha1.ServiceImport {
	return &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, IPs: ips, Ports: ports}}
}

func mcHeadless(name string, ports ...mcsv1alpha1.ServicePort) *mcsv1alpha1.ServiceImport {
	return &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.Headless, Ports: ports}}
}

// mcSlice is an EndpointSlice of import imp exported by cluster (no
// source-cluster label when cluster is ""), as an MCS controller writes it.
func mcSlice(name, imp, cluster string, ports []discoveryv1.EndpointPort, eps ...endpoint) *discoveryv1.EndpointSlice {
	s := endpointSlice(name, "", ports, eps...)
	s.Labels = map[string]string{watchcache.LabelMultiClusterServiceName: imp}
	if cluster != "" {
		s.Labels[watchcache.LabelSourceCluster] = cluster
	}
	return s
}

// Names and records.

// mcSvc is the name of imported service svc in namespace ns.
func mcSvc(svc, ns string) string { return svcName(svc, ns, clustersetZone) }

// mcSOA is the SOA of one of multicluster's zones, serial zeroed.
func mcSOA(zone string) string { return soaLine(zone, clustersetZone) }

// mcNXDOMAIN is multicluster's negative answer for a name that does not
// exist.
func mcNXDOMAIN(zone string) wantReply { return nxdomain(mcSOA(zone)) }

// mcNODATA is multicluster's negative answer for a name without records
// of the type.
func mcNODATA(zone string) wantReply { return nodata(mcSOA(zone)) }

func mcPTR(t *testing.T, ip, target string) dnsCase {
	return dnsCase{ptrName(t, ip), dns.TypePTR, answer(rrLine(ptrName(t, ip), "PTR", target))}
}

// mcSRVWant is the answer of an SRV query: the records, and the targets'
// address records in the Additional section.
func mcSRVWant(srv []string, targets map[string][]string) wantReply {
	var extra []string
	for name, ips := range targets {
		for _, ip := range ips {
			extra = append(extra, addrLine(name, ip))
		}
	}
	return answer(srv...).withExtra(extra...)
}

// The tests.

// TestMulticlusterApex checks the zone's own records: the schema version
// 1.0.0, SOA and NS with the nameserver's address, NXDOMAIN with the SOA,
// and a namespace that exists once it has an import, with the SOA serial
// moving.
func TestMulticlusterApex(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("apex")
	s := e.server(mcCorefile)

	version := answer(rrLine("dns-version."+clustersetZone, "TXT", `"1.0.0"`))
	nsA := rrLine("ns.dns."+clustersetZone, "A", "127.0.0.1")
	checkAll(t, s, "udp", []dnsCase{
		{"dns-version." + clustersetZone, dns.TypeTXT, version},
		{"dns-version." + clustersetZone, dns.TypeA, mcNODATA(clustersetZone)},
		{clustersetZone, dns.TypeSOA, answer(mcSOA(clustersetZone))},
		{clustersetZone, dns.TypeNS, answer(rrLine(clustersetZone, "NS", "ns.dns.clusterset.local.")).withExtra(nsA)},
		{clustersetZone, dns.TypeA, mcNODATA(clustersetZone)},
		{"ns.dns." + clustersetZone, dns.TypeA, answer(nsA)},
		{"nothing-here." + clustersetZone, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{ns + ".svc." + clustersetZone, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		// kubeschema still answers its own zone in the same block.
		{"dns-version." + clusterZone, dns.TypeTXT, answer(rrLine("dns-version."+clusterZone, "TXT", `"1.1.0"`))},
	})
	expect(t, s, "tcp", "dns-version."+clustersetZone, dns.TypeTXT, version, settleTimeout)

	before := soaSerial(t, s, clustersetZone)
	e.createImport(ns, mcClusterSetIP("serial", []string{"10.247.0.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	expect(t, s, "udp", mcSvc("serial", ns), dns.TypeA, answer(rrLine(mcSvc("serial", ns), "A", "10.247.0.10")), settleTimeout)
	expect(t, s, "udp", ns+".svc."+clustersetZone, dns.TypeA, mcNODATA(clustersetZone), settleTimeout)
	if after := soaSerial(t, s, clustersetZone); after <= before {
		t.Errorf("SOA serial %d after a new import, was %d: want it larger", after, before)
	}
}

// TestMulticlusterClusterSetIP checks a ClusterSetIP import: its A record,
// an SRV record per named port and on the bare name with the A record in
// the Additional section, no SRV for an unnamed port, PTR, the question's
// case repeated; and that <clusterid>.<svc> does not exist even when
// member clusters' slices name the cluster.
func TestMulticlusterClusterSetIP(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("clustersetip")
	s := e.server(mcCorefile)

	e.createImport(ns, mcClusterSetIP("web", []string{"10.247.1.10"},
		mcPort("http", corev1.ProtocolTCP, 80), mcPort("dns", corev1.ProtocolUDP, 53), mcPort("", corev1.ProtocolTCP, 8080)))
	ports := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	e.createSlice(ns, mcSlice("web-a", "web", "cluster-a", ports, endpoint{addr: "10.246.1.10", hostname: "pod-0"}))

	name := mcSvc("web", ns)
	a := rrLine(name, "A", "10.247.1.10")
	srvHTTP := rrLine("_http._tcp."+name, "SRV", "0 100 80 "+name)
	srvDNS := rrLine("_dns._udp."+name, "SRV", "0 100 53 "+name)
	mixed := mixedCase(name)
	checkAll(t, s, "udp", []dnsCase{
		{name, dns.TypeA, answer(a)},
		{name, dns.TypeAAAA, mcNODATA(clustersetZone)},
		{name, dns.TypeTXT, mcNODATA(clustersetZone)},
		{"_http._tcp." + name, dns.TypeSRV, answer(srvHTTP).withExtra(a)},
		{"_dns._udp." + name, dns.TypeSRV, answer(srvDNS).withExtra(a)},
		{name, dns.TypeSRV, answer(srvHTTP, srvDNS).withExtra(a)},
		{"_http._tcp." + name, dns.TypeA, mcNODATA(clustersetZone)},
		{"_dns._tcp." + name, dns.TypeSRV, mcNXDOMAIN(clustersetZone)},
		{"_tcp." + name, dns.TypeSRV, mcNODATA(clustersetZone)},
		{"_sctp." + name, dns.TypeSRV, mcNXDOMAIN(clustersetZone)},
		mcPTR(t, "10.247.1.10", name),
		// Names that MUST NOT exist, and nothing under them.
		{"cluster-a." + name, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{"cluster-a." + name, dns.TypeSRV, mcNXDOMAIN(clustersetZone)},
		{"pod-0.cluster-a." + name, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{ptrName(t, "10.246.1.10"), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
		{mixed, dns.TypeA, answer(rrLine(mixed, "A", "10.247.1.10"))},
		{"missing." + ns + ".svc." + clustersetZone, dns.TypeA, mcNXDOMAIN(clustersetZone)},
	})
	expect(t, s, "tcp", name, dns.TypeSRV, answer(srvHTTP, srvDNS).withExtra(a), settleTimeout)
}

// TestMulticlusterDualStack checks a dual-stack ClusterSetIP import: A and
// AAAA, both in the Additional section of SRV, and PTR records under
// in-addr.arpa and ip6.arpa; and an IPv6-only import (A is NODATA).
func TestMulticlusterDualStack(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("dualstack")
	s := e.server(mcCorefile)

	e.createImport(ns, mcClusterSetIP("dual", []string{"10.247.2.10", "fd00:10:247:2::10"}, mcPort("https", corev1.ProtocolTCP, 443)))
	e.createImport(ns, mcClusterSetIP("v6", []string{"fd00:10:247:2::20"}, mcPort("https", corev1.ProtocolTCP, 443)))
	dual, v6 := mcSvc("dual", ns), mcSvc("v6", ns)
	a, aaaa := rrLine(dual, "A", "10.247.2.10"), rrLine(dual, "AAAA", "fd00:10:247:2::10")
	v6AAAA := rrLine(v6, "AAAA", "fd00:10:247:2::20")
	checkAll(t, s, "udp", []dnsCase{
		{dual, dns.TypeA, answer(a)},
		{dual, dns.TypeAAAA, answer(aaaa)},
		{dual, dns.TypeSRV, answer(rrLine("_https._tcp."+dual, "SRV", "0 100 443 "+dual)).withExtra(a, aaaa)},
		{"_https._tcp." + dual, dns.TypeSRV, answer(rrLine("_https._tcp."+dual, "SRV", "0 100 443 "+dual)).withExtra(a, aaaa)},
		mcPTR(t, "10.247.2.10", dual),
		mcPTR(t, "fd00:10:247:2::10", dual),
		{v6, dns.TypeA, mcNODATA(clustersetZone)},
		{v6, dns.TypeAAAA, answer(v6AAAA)},
		mcPTR(t, "fd00:10:247:2::20", v6),
		{ptrName(t, "fd00:10:247:2::ffff"), dns.TypePTR, mcNXDOMAIN(reverse6Zone)},
	})
}

// TestMulticlusterHeadless checks a headless import whose endpoints come
// from two member clusters, one of them dual-stack and with its own port
// numbers: A/AAAA for every ready endpoint across clusters,
// <hostname>.<clusterid>.<svc> per endpoint (the dashed address when it
// has no hostname), N×M SRV records with the targets' addresses, PTR to
// the host names, <clusterid>.<svc> NXDOMAIN; and NXDOMAIN for everything
// once no endpoint is ready.
func TestMulticlusterHeadless(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("headless")
	s := e.server(mcCorefile)

	e.createImport(ns, mcHeadless("db", mcPort("http", corev1.ProtocolTCP, 80), mcPort("dns", corev1.ProtocolUDP, 53)))
	portsA := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080), slicePort("dns", corev1.ProtocolUDP, 5353)}
	portsB := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8081), slicePort("dns", corev1.ProtocolUDP, 5354)}
	e.createSlice(ns, mcSlice("db-a-v4", "db", "cluster-a", portsA,
		endpoint{addr: "10.246.3.10", hostname: "pet-0"}, endpoint{addr: "10.246.3.11"},
		endpoint{addr: "10.246.3.12", hostname: "sick", unready: true}, endpoint{addr: "10.246.3.13", hostname: "leaving", terminating: true}))
	e.createSlice(ns, mcSlice("db-a-v6", "db", "cluster-a", portsA, endpoint{addr: "fd00:10:246:3::10", hostname: "pet-0"}))
	e.createSlice(ns, mcSlice("db-b", "db", "cluster-b", portsB,
		endpoint{addr: "10.246.3.20", hostname: "pet-0"}, endpoint{addr: "10.246.3.21", hostname: "pet-1"}))

	svc := mcSvc("db", ns)
	petA, dashedA := "pet-0.cluster-a."+svc, "10-246-3-11.cluster-a."+svc
	petB, pet1B := "pet-0.cluster-b."+svc, "pet-1.cluster-b."+svc
	targets := map[string][]string{petA: {"10.246.3.10", "fd00:10:246:3::10"}, dashedA: {"10.246.3.11"},
		petB: {"10.246.3.20"}, pet1B: {"10.246.3.21"}}
	port := map[string]map[string]string{
		"http": {petA: "8080", dashedA: "8080", petB: "8081", pet1B: "8081"},
		"dns":  {petA: "5353", dashedA: "5353", petB: "5354", pet1B: "5354"},
	}
	srv := map[string][]string{}
	for _, p := range []struct{ name, proto string }{{"http", "tcp"}, {"dns", "udp"}} {
		for target := range targets {
			srv[p.name] = append(srv[p.name], rrLine("_"+p.name+"._"+p.proto+"."+svc, "SRV", "0 25 "+port[p.name][target]+" "+target))
		}
	}
	checkAll(t, s, "udp", []dnsCase{
		{svc, dns.TypeA, answer(addrLine(svc, "10.246.3.10"), addrLine(svc, "10.246.3.11"), addrLine(svc, "10.246.3.20"), addrLine(svc, "10.246.3.21"))},
		{svc, dns.TypeAAAA, answer(addrLine(svc, "fd00:10:246:3::10"))},
		{petA, dns.TypeA, answer(addrLine(petA, "10.246.3.10"))},
		{petA, dns.TypeAAAA, answer(addrLine(petA, "fd00:10:246:3::10"))},
		{petB, dns.TypeA, answer(addrLine(petB, "10.246.3.20"))},
		{petB, dns.TypeAAAA, mcNODATA(clustersetZone)},
		{pet1B, dns.TypeA, answer(addrLine(pet1B, "10.246.3.21"))},
		{dashedA, dns.TypeA, answer(addrLine(dashedA, "10.246.3.11"))},
		{"pet-1.cluster-a." + svc, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{"sick.cluster-a." + svc, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{"leaving.cluster-a." + svc, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{"_http._tcp." + svc, dns.TypeSRV, mcSRVWant(srv["http"], targets)},
		{"_dns._udp." + svc, dns.TypeSRV, mcSRVWant(srv["dns"], targets)},
		mcPTR(t, "10.246.3.10", petA),
		mcPTR(t, "fd00:10:246:3::10", petA),
		mcPTR(t, "10.246.3.11", dashedA),
		mcPTR(t, "10.246.3.20", petB),
		mcPTR(t, "10.246.3.21", pet1B),
		{ptrName(t, "10.246.3.12"), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
		// The reserved per-cluster names.
		{"cluster-a." + svc, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{"cluster-b." + svc, dns.TypeAAAA, mcNXDOMAIN(clustersetZone)},
		{"cluster-b." + svc, dns.TypeSRV, mcNXDOMAIN(clustersetZone)},
	})
	// Eight SRV records and their targets' addresses: more than 512 bytes,
	// so over TCP.
	expect(t, s, "tcp", svc, dns.TypeSRV, mcSRVWant(append(slices.Clone(srv["http"]), srv["dns"]...), targets), settleTimeout)

	// No ready endpoint left in any cluster: the import has no name.
	e.replaceEndpoints(ns, "db-a-v4", endpoint{addr: "10.246.3.10", hostname: "pet-0", unready: true})
	e.replaceEndpoints(ns, "db-a-v6", endpoint{addr: "fd00:10:246:3::10", hostname: "pet-0", unready: true})
	e.replaceEndpoints(ns, "db-b", endpoint{addr: "10.246.3.20", hostname: "pet-0", terminating: true})
	for _, c := range []dnsCase{
		{svc, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{svc, dns.TypeAAAA, mcNXDOMAIN(clustersetZone)},
		{"_http._tcp." + svc, dns.TypeSRV, mcNXDOMAIN(clustersetZone)},
		{petA, dns.TypeA, mcNXDOMAIN(clustersetZone)},
		{ptrName(t, "10.246.3.10"), dns.TypePTR, mcNXDOMAIN(reverse4Zone)},
	} {
		expect(t, s, "udp", c.name, c.qtype, c.want, changeTimeout)
	}
}

// TestMulticlusterLargeAnswer checks a headless import with 60 ready
// endpoints over two clusters: over UDP without EDNS the answer is
// truncated (TC), over TCP it is whole, and answers rotate.
func TestMulticlusterLargeAnswer(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("large")
	s := e.server(mcCorefile)

	const n = 60
	e.createImport(ns, mcHeadless("many", mcPort("http", corev1.ProtocolTCP, 80)))
	name := mcSvc("many", ns)
	var want []string
	eps := map[string][]endpoint{}
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("10.246.8.%d", i)
		cluster := []string{"cluster-a", "cluster-b"}[i%2]
		eps[cluster] = append(eps[cluster], endpoint{addr: ip})
		want = append(want, rrLine(name, "A", ip))
	}
	ports := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	for cluster, list := range eps {
		e.createSlice(ns, mcSlice("many-"+cluster, "many", cluster, ports, list...))
	}
	expect(t, s, "tcp", name, dns.TypeA, answer(want...), settleTimeout)

	expectTruncatedOverUDP(t, s, name, n)
	expectRotated(t, s, name, n)
}

// TestMulticlusterTransfer checks an AXFR of clusterset.local: SOA first
// and last, an import's records in between.
func TestMulticlusterTransfer(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("axfr")
	s := e.server(mcCorefile)

	e.createImport(ns, mcClusterSetIP("web", []string{"10.247.10.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	name := mcSvc("web", ns)
	must := parseRRs([]string{
		rrLine(clustersetZone, "NS", "ns.dns.clusterset.local."),
		rrLine("ns.dns."+clustersetZone, "A", "127.0.0.1"),
		rrLine("dns-version."+clustersetZone, "TXT", `"1.0.0"`),
		rrLine(name, "A", "10.247.10.10"),
		rrLine("_http._tcp."+name, "SRV", "0 100 80 "+name),
	})
	var last string
	eventually(diffReport{t, &last}, settleTimeout, "AXFR of "+clustersetZone+" with the import", func() bool {
		rrs, err := axfr(s, clustersetZone)
		last = axfrProblem(rrs, err, mcSOA(clustersetZone), must)
		return last == ""
	})
	rrs, _ := axfr(s, clustersetZone)
	for _, rr := range rrs {
		if dns.IsSubDomain(clusterZone, rr.Header().Name) {
			t.Errorf("the transfer of %s holds %s", clustersetZone, rr)
		}
	}
}
