package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
	"github.com/schemadns/schemadns/test/kubeapi"
)

// Whole-server tests of the multicluster plugin: ServiceImports and the
// EndpointSlices of member clusters are created through the real API
// server (with the MCS CRDs installed), and the answers read back over UDP
// and TCP, compared exactly as the kubeschema tests compare them (ksWant,
// ksExpect). Each test works in namespaces of its own and uses addresses
// no other test uses: endpoints 10.246.<test>.x and fd00:10:246:<test>::x,
// clusterset IPs 10.247.<test>.x and fd00:10:247:<test>::x.

const mcZone = "clusterset.local."

// mcEnv is one test's access to the shared API server, with the MCS client.
type mcEnv struct {
	*ksEnv
	mcs mcsclient.Interface
}

func newMcEnv(t *testing.T) *mcEnv {
	t.Helper()
	c := kubeapi.Shared(t)
	mcs, err := mcsclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatalf("MCS client: %v", err)
	}
	return &mcEnv{ksEnv: newKsEnv(t), mcs: mcs}
}

// namespace creates a namespace whose imports, slices and services are
// deleted when the test ends (imports first: cleanups run in reverse).
func (e *mcEnv) namespace(prefix string) string {
	e.t.Helper()
	ns := e.ksEnv.namespace("mc-" + prefix)
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

// mcCorefile is the Corefile: kubeschema and multicluster in one
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
func mcSlice(name, imp, cluster string, ports []discoveryv1.EndpointPort, eps ...ksEP) *discoveryv1.EndpointSlice {
	s := ksSlice(name, "", ports, eps...)
	s.Labels = map[string]string{watchcache.LabelMultiClusterServiceName: imp}
	if cluster != "" {
		s.Labels[watchcache.LabelSourceCluster] = cluster
	}
	return s
}

// Names and records.

func mcSvc(svc, ns string) string { return svc + "." + ns + ".svc." + mcZone }

// mcSOA is the SOA of one of multicluster's zones, serial zeroed.
func mcSOA(zone string) string {
	return ksRR(zone, "SOA", "ns.dns.clusterset.local. hostmaster.clusterset.local. 0 7200 1800 86400 5")
}

func mcNXDOMAIN(zone string) ksWant {
	return ksWant{rcode: dns.RcodeNameError, authority: []string{mcSOA(zone)}}
}

func mcNODATA(zone string) ksWant { return ksWant{authority: []string{mcSOA(zone)}} }

func mcPTR(t *testing.T, ip, target string) ksCase {
	return ksCase{ksPTRName(t, ip), dns.TypePTR, ksAnswer(ksRR(ksPTRName(t, ip), "PTR", target))}
}

// mcSRVWant is the answer of an SRV query: the records, and the targets'
// address records in the Additional section.
func mcSRVWant(srv []string, targets map[string][]string) ksWant {
	var extra []string
	for name, ips := range targets {
		for _, ip := range ips {
			extra = append(extra, ksAddrRR(name, ip))
		}
	}
	return ksAnswer(srv...).withExtra(extra...)
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

	version := ksAnswer(ksRR("dns-version."+mcZone, "TXT", `"1.0.0"`))
	nsA := ksRR("ns.dns."+mcZone, "A", "127.0.0.1")
	ksCheck(t, s, "udp", []ksCase{
		{"dns-version." + mcZone, dns.TypeTXT, version},
		{"dns-version." + mcZone, dns.TypeA, mcNODATA(mcZone)},
		{mcZone, dns.TypeSOA, ksAnswer(mcSOA(mcZone))},
		{mcZone, dns.TypeNS, ksAnswer(ksRR(mcZone, "NS", "ns.dns.clusterset.local.")).withExtra(nsA)},
		{mcZone, dns.TypeA, mcNODATA(mcZone)},
		{"ns.dns." + mcZone, dns.TypeA, ksAnswer(nsA)},
		{"nothing-here." + mcZone, dns.TypeA, mcNXDOMAIN(mcZone)},
		{ns + ".svc." + mcZone, dns.TypeA, mcNXDOMAIN(mcZone)},
		// kubeschema still answers its own zone in the same block.
		{"dns-version." + ksZone, dns.TypeTXT, ksAnswer(ksRR("dns-version."+ksZone, "TXT", `"1.1.0"`))},
	})
	ksExpect(t, s, "tcp", "dns-version."+mcZone, dns.TypeTXT, version, ksSettle)

	before := mcSerial(t, s)
	e.createImport(ns, mcClusterSetIP("serial", []string{"10.247.0.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	ksExpect(t, s, "udp", mcSvc("serial", ns), dns.TypeA, ksAnswer(ksRR(mcSvc("serial", ns), "A", "10.247.0.10")), ksSettle)
	ksExpect(t, s, "udp", ns+".svc."+mcZone, dns.TypeA, mcNODATA(mcZone), ksSettle)
	if after := mcSerial(t, s); after <= before {
		t.Errorf("SOA serial %d after a new import, was %d: want it larger", after, before)
	}
}

func mcSerial(t *testing.T, s *server) uint32 {
	t.Helper()
	r := s.exchange(t, "udp", mcZone, dns.TypeSOA)
	if len(r.Answer) != 1 {
		t.Fatalf("SOA query: want one record, got:\n%s", rrStrings(r.Answer))
	}
	return r.Answer[0].(*dns.SOA).Serial
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
	ports := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080)}
	e.createSlice(ns, mcSlice("web-a", "web", "cluster-a", ports, ksEP{addr: "10.246.1.10", hostname: "pod-0"}))

	name := mcSvc("web", ns)
	a := ksRR(name, "A", "10.247.1.10")
	srvHTTP := ksRR("_http._tcp."+name, "SRV", "0 100 80 "+name)
	srvDNS := ksRR("_dns._udp."+name, "SRV", "0 100 53 "+name)
	mixed := ksMixedCase(name)
	ksCheck(t, s, "udp", []ksCase{
		{name, dns.TypeA, ksAnswer(a)},
		{name, dns.TypeAAAA, mcNODATA(mcZone)},
		{name, dns.TypeTXT, mcNODATA(mcZone)},
		{"_http._tcp." + name, dns.TypeSRV, ksAnswer(srvHTTP).withExtra(a)},
		{"_dns._udp." + name, dns.TypeSRV, ksAnswer(srvDNS).withExtra(a)},
		{name, dns.TypeSRV, ksAnswer(srvHTTP, srvDNS).withExtra(a)},
		{"_http._tcp." + name, dns.TypeA, mcNODATA(mcZone)},
		{"_dns._tcp." + name, dns.TypeSRV, mcNXDOMAIN(mcZone)},
		{"_tcp." + name, dns.TypeSRV, mcNODATA(mcZone)},
		{"_sctp." + name, dns.TypeSRV, mcNXDOMAIN(mcZone)},
		mcPTR(t, "10.247.1.10", name),
		// Names that MUST NOT exist, and nothing under them.
		{"cluster-a." + name, dns.TypeA, mcNXDOMAIN(mcZone)},
		{"cluster-a." + name, dns.TypeSRV, mcNXDOMAIN(mcZone)},
		{"pod-0.cluster-a." + name, dns.TypeA, mcNXDOMAIN(mcZone)},
		{ksPTRName(t, "10.246.1.10"), dns.TypePTR, mcNXDOMAIN(ksRev4)},
		{mixed, dns.TypeA, ksAnswer(ksRR(mixed, "A", "10.247.1.10"))},
		{"missing." + ns + ".svc." + mcZone, dns.TypeA, mcNXDOMAIN(mcZone)},
	})
	ksExpect(t, s, "tcp", name, dns.TypeSRV, ksAnswer(srvHTTP, srvDNS).withExtra(a), ksSettle)
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
	a, aaaa := ksRR(dual, "A", "10.247.2.10"), ksRR(dual, "AAAA", "fd00:10:247:2::10")
	v6AAAA := ksRR(v6, "AAAA", "fd00:10:247:2::20")
	ksCheck(t, s, "udp", []ksCase{
		{dual, dns.TypeA, ksAnswer(a)},
		{dual, dns.TypeAAAA, ksAnswer(aaaa)},
		{dual, dns.TypeSRV, ksAnswer(ksRR("_https._tcp."+dual, "SRV", "0 100 443 "+dual)).withExtra(a, aaaa)},
		{"_https._tcp." + dual, dns.TypeSRV, ksAnswer(ksRR("_https._tcp."+dual, "SRV", "0 100 443 "+dual)).withExtra(a, aaaa)},
		mcPTR(t, "10.247.2.10", dual),
		mcPTR(t, "fd00:10:247:2::10", dual),
		{v6, dns.TypeA, mcNODATA(mcZone)},
		{v6, dns.TypeAAAA, ksAnswer(v6AAAA)},
		mcPTR(t, "fd00:10:247:2::20", v6),
		{ksPTRName(t, "fd00:10:247:2::ffff"), dns.TypePTR, mcNXDOMAIN(ksRev6)},
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
	portsA := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080), ksSlicePort("dns", corev1.ProtocolUDP, 5353)}
	portsB := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8081), ksSlicePort("dns", corev1.ProtocolUDP, 5354)}
	e.createSlice(ns, mcSlice("db-a-v4", "db", "cluster-a", portsA,
		ksEP{addr: "10.246.3.10", hostname: "pet-0"}, ksEP{addr: "10.246.3.11"},
		ksEP{addr: "10.246.3.12", hostname: "sick", unready: true}, ksEP{addr: "10.246.3.13", hostname: "leaving", terminating: true}))
	e.createSlice(ns, mcSlice("db-a-v6", "db", "cluster-a", portsA, ksEP{addr: "fd00:10:246:3::10", hostname: "pet-0"}))
	e.createSlice(ns, mcSlice("db-b", "db", "cluster-b", portsB,
		ksEP{addr: "10.246.3.20", hostname: "pet-0"}, ksEP{addr: "10.246.3.21", hostname: "pet-1"}))

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
			srv[p.name] = append(srv[p.name], ksRR("_"+p.name+"._"+p.proto+"."+svc, "SRV", "0 25 "+port[p.name][target]+" "+target))
		}
	}
	ksCheck(t, s, "udp", []ksCase{
		{svc, dns.TypeA, ksAnswer(ksAddrRR(svc, "10.246.3.10"), ksAddrRR(svc, "10.246.3.11"), ksAddrRR(svc, "10.246.3.20"), ksAddrRR(svc, "10.246.3.21"))},
		{svc, dns.TypeAAAA, ksAnswer(ksAddrRR(svc, "fd00:10:246:3::10"))},
		{petA, dns.TypeA, ksAnswer(ksAddrRR(petA, "10.246.3.10"))},
		{petA, dns.TypeAAAA, ksAnswer(ksAddrRR(petA, "fd00:10:246:3::10"))},
		{petB, dns.TypeA, ksAnswer(ksAddrRR(petB, "10.246.3.20"))},
		{petB, dns.TypeAAAA, mcNODATA(mcZone)},
		{pet1B, dns.TypeA, ksAnswer(ksAddrRR(pet1B, "10.246.3.21"))},
		{dashedA, dns.TypeA, ksAnswer(ksAddrRR(dashedA, "10.246.3.11"))},
		{"pet-1.cluster-a." + svc, dns.TypeA, mcNXDOMAIN(mcZone)},
		{"sick.cluster-a." + svc, dns.TypeA, mcNXDOMAIN(mcZone)},
		{"leaving.cluster-a." + svc, dns.TypeA, mcNXDOMAIN(mcZone)},
		{"_http._tcp." + svc, dns.TypeSRV, mcSRVWant(srv["http"], targets)},
		{"_dns._udp." + svc, dns.TypeSRV, mcSRVWant(srv["dns"], targets)},
		mcPTR(t, "10.246.3.10", petA),
		mcPTR(t, "fd00:10:246:3::10", petA),
		mcPTR(t, "10.246.3.11", dashedA),
		mcPTR(t, "10.246.3.20", petB),
		mcPTR(t, "10.246.3.21", pet1B),
		{ksPTRName(t, "10.246.3.12"), dns.TypePTR, mcNXDOMAIN(ksRev4)},
		// The reserved per-cluster names.
		{"cluster-a." + svc, dns.TypeA, mcNXDOMAIN(mcZone)},
		{"cluster-b." + svc, dns.TypeAAAA, mcNXDOMAIN(mcZone)},
		{"cluster-b." + svc, dns.TypeSRV, mcNXDOMAIN(mcZone)},
	})
	// Eight SRV records and their targets' addresses: more than 512 bytes,
	// so over TCP.
	ksExpect(t, s, "tcp", svc, dns.TypeSRV, mcSRVWant(append(slices.Clone(srv["http"]), srv["dns"]...), targets), ksSettle)

	// No ready endpoint left in any cluster: the import has no name.
	e.replaceEndpoints(ns, "db-a-v4", ksEP{addr: "10.246.3.10", hostname: "pet-0", unready: true})
	e.replaceEndpoints(ns, "db-a-v6", ksEP{addr: "fd00:10:246:3::10", hostname: "pet-0", unready: true})
	e.replaceEndpoints(ns, "db-b", ksEP{addr: "10.246.3.20", hostname: "pet-0", terminating: true})
	for _, c := range []ksCase{
		{svc, dns.TypeA, mcNXDOMAIN(mcZone)},
		{svc, dns.TypeAAAA, mcNXDOMAIN(mcZone)},
		{"_http._tcp." + svc, dns.TypeSRV, mcNXDOMAIN(mcZone)},
		{petA, dns.TypeA, mcNXDOMAIN(mcZone)},
		{ksPTRName(t, "10.246.3.10"), dns.TypePTR, mcNXDOMAIN(ksRev4)},
	} {
		ksExpect(t, s, "udp", c.name, c.qtype, c.want, ksChange)
	}
}

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
	ports := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080)}
	e.createSlice(ns, mcSlice("mixed-nocluster", "mixed", "", ports, ksEP{addr: "10.246.4.20", hostname: "h"}))
	e.createSlice(ns, mcSlice("mixed-badid", "mixed", "cluster_c", ports, ksEP{addr: "10.246.4.30", hostname: "h"}))
	e.createSlice(ns, mcSlice("mixed-b", "mixed", "cluster-b", ports, ksEP{addr: "10.246.4.10", hostname: "h2"}))
	e.createSlice(ns, mcSlice("mixed-a", "mixed", "cluster-a", ports, ksEP{addr: "10.246.4.10", hostname: "h"}))
	e.createSlice(ns, mcSlice("mixed-d", "mixed", "Cluster-D", ports, ksEP{addr: "10.246.4.40", hostname: "d"}))

	unnamed, mixed := mcSvc("unnamed", ns), mcSvc("mixed", ns)
	hA, dD := "h.cluster-a."+mixed, "d.cluster-d."+mixed
	ksCheck(t, s, "udp", []ksCase{
		{mcSvc("noips", ns), dns.TypeA, mcNXDOMAIN(mcZone)},
		{"_http._tcp." + mcSvc("noips", ns), dns.TypeSRV, mcNXDOMAIN(mcZone)},
		{unnamed, dns.TypeA, ksAnswer(ksRR(unnamed, "A", "10.247.4.20"))},
		{unnamed, dns.TypeSRV, mcNODATA(mcZone)},
		{"_tcp." + unnamed, dns.TypeSRV, mcNXDOMAIN(mcZone)},
		{mixed, dns.TypeA, ksAnswer(ksAddrRR(mixed, "10.246.4.10"), ksAddrRR(mixed, "10.246.4.40"))},
		{hA, dns.TypeA, ksAnswer(ksAddrRR(hA, "10.246.4.10"))},
		{"h2.cluster-b." + mixed, dns.TypeA, mcNXDOMAIN(mcZone)},
		{dD, dns.TypeA, ksAnswer(ksAddrRR(dD, "10.246.4.40"))},
		{"_http._tcp." + mixed, dns.TypeSRV, mcSRVWant([]string{
			ksRR("_http._tcp."+mixed, "SRV", "0 50 8080 "+hA), ksRR("_http._tcp."+mixed, "SRV", "0 50 8080 "+dD),
		}, map[string][]string{hA: {"10.246.4.10"}, dD: {"10.246.4.40"}})},
		mcPTR(t, "10.246.4.10", hA),
		{ksPTRName(t, "10.246.4.20"), dns.TypePTR, mcNXDOMAIN(ksRev4)},
		{ksPTRName(t, "10.246.4.30"), dns.TypePTR, mcNXDOMAIN(ksRev4)},
	})

	// Once the import has an IP, it is served.
	e.updateImport(ns, "noips", func(imp *mcsv1alpha1.ServiceImport) { imp.Spec.IPs = []string{"10.247.4.10"} })
	ksExpect(t, s, "udp", mcSvc("noips", ns), dns.TypeA, ksAnswer(ksRR(mcSvc("noips", ns), "A", "10.247.4.10")), ksChange)
}

// TestMulticlusterReverse runs the Corefile: kubeschema and
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

	dummy := e.createService(ns, ksClusterIP("dummy", ksPort("http", corev1.ProtocolTCP, 80)))
	dummyIP := dummy.Spec.ClusterIP
	e.createImport(ns, mcClusterSetIP("shared", []string{dummyIP}, mcPort("http", corev1.ProtocolTCP, 80)))
	e.createImport(ns, mcClusterSetIP("remote", []string{"10.247.6.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	ports := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080)}
	e.createService(ns, ksHeadless("db", ksPort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, ksSlice("db-local", "db", ports, ksEP{addr: "10.246.6.10", hostname: "pet-0"}))
	e.createImport(ns, mcHeadless("db", mcPort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, mcSlice("db-here", "db", "cluster-here", ports, ksEP{addr: "10.246.6.10", hostname: "pet-0"}))
	e.createSlice(ns, mcSlice("db-b", "db", "cluster-b", ports, ksEP{addr: "10.246.6.20", hostname: "pet-0"}))

	shared, remote := mcSvc("shared", ns), mcSvc("remote", ns)
	localDB, remoteDB := "pet-0."+ksSvc("db", ns), "pet-0.cluster-b."+mcSvc("db", ns)
	ksCheck(t, both, "udp", []ksCase{
		// The records multicluster serves for these addresses exist...
		{shared, dns.TypeA, ksAnswer(ksRR(shared, "A", dummyIP))},
		{"pet-0.cluster-here." + mcSvc("db", ns), dns.TypeA, ksAnswer(ksRR("pet-0.cluster-here."+mcSvc("db", ns), "A", "10.246.6.10"))},
		// ...and the cluster-local PTR wins; others come from multicluster.
		mcPTR(t, dummyIP, ksSvc("dummy", ns)),
		mcPTR(t, "10.246.6.10", localDB),
		mcPTR(t, "10.247.6.10", remote),
		mcPTR(t, "10.246.6.20", remoteDB),
		// Owned by neither: multicluster's NXDOMAIN, after kubeschema fell through.
		{ksPTRName(t, "10.247.6.99"), dns.TypePTR, mcNXDOMAIN(ksRev4)},
		{ksPTRName(t, "fd00:10:247:6::99"), dns.TypePTR, mcNXDOMAIN(ksRev6)},
	})
	ksCheck(t, alone, "udp", []ksCase{
		{ksPTRName(t, dummyIP), dns.TypePTR, mcNXDOMAIN(ksRev4)},
		{ksPTRName(t, "10.246.6.10"), dns.TypePTR, mcNXDOMAIN(ksRev4)},
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
		ksExpect(t, s, "udp", ksPTRName(t, dummyIP), dns.TypePTR, mcPTR(t, dummyIP, shared).want, ksChange)
		ksExpect(t, s, "udp", ksPTRName(t, "10.246.6.10"), dns.TypePTR,
			mcPTR(t, "10.246.6.10", "pet-0.cluster-here."+mcSvc("db", ns)).want, ksChange)
	}
}

// TestMulticlusterSharedWatches checks that kubeschema and multicluster
// configured with the same connection, in one server block or in two,
// hold one cache: one Handle each, and one watch per resource shared by
// both (services and endpointslices) or multicluster's own
// (serviceimports). The API server agrees: it serves exactly one more
// watch of each of those resources than before the server started. Both
// plugins answer from the cache.
func TestMulticlusterSharedWatches(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("shared")
	e.createImport(ns, mcClusterSetIP("web", []string{"10.247.7.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	web := e.createService(ns, ksClusterIP("web", ksPort("http", corev1.ProtocolTCP, 80)))

	twoBlocks := `cluster.local:0 {
    bind 127.0.0.1
    kubeschema {
        kubeconfig %[1]s
        startup_timeout 60s
    }
}
clusterset.local:0 {
    bind 127.0.0.1
    multicluster {
        kubeconfig %[1]s
        startup_timeout 60s
    }
}
`
	for _, tc := range []struct{ name, corefile string }{{"one block", mcCorefile}, {"two blocks", twoBlocks}} {
		t.Run(tc.name, func(t *testing.T) {
			if u := mcCaches(e.kubeconfig); len(u) != 0 {
				t.Fatalf("caches open before the server starts: %+v", u)
			}
			before := e.settledAPIWatches()
			s := startServer(t, fmt.Sprintf(tc.corefile, e.kubeconfig))
			u := mcCaches(e.kubeconfig)
			want := map[string]int{"services": 2, "endpointslices": 2, "serviceimports": 1}
			if len(u) != 1 || u[0].Handles != 2 || !mapsEqual(u[0].Watches, want) {
				t.Fatalf("caches: %+v; want one, held by 2 handles, watches %v", u, want)
			}
			e.expectAPIWatches(before, map[string]int{"services": 1, "endpointslices": 1, "serviceimports": 1})
			if tc.name == "one block" {
				ksExpect(t, s, "udp", mcSvc("web", ns), dns.TypeA, ksAnswer(ksRR(mcSvc("web", ns), "A", "10.247.7.10")), ksSettle)
				ksExpect(t, s, "udp", ksSvc("web", ns), dns.TypeA, ksAnswer(ksRR(ksSvc("web", ns), "A", web.Spec.ClusterIP)), ksSettle)
			}
			if got := mcGauge(t, "coredns_multicluster_synced"); got != 1 {
				t.Errorf("coredns_multicluster_synced = %v while serving, want 1", got)
			}
		})
	}
	if u := mcCaches(e.kubeconfig); len(u) != 0 {
		t.Errorf("caches left open after the servers stopped: %+v", u)
	}
}

// mcWatched are the resources whose watches the API server counts for
// TestMulticlusterSharedWatches.
var mcWatched = []string{"services", "endpointslices", "serviceimports"}

// apiWatches reads, from the API server's own metrics, how many watches of
// each of mcWatched it is serving (its own internal ones included).
func (e *mcEnv) apiWatches() map[string]int {
	e.t.Helper()
	out, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(e.ctx)
	if err != nil {
		e.t.Fatalf("API server metrics: %v", err)
	}
	counts := map[string]int{}
	for _, r := range mcWatched {
		counts[r] = 0
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		for _, r := range mcWatched {
			if strings.Contains(line, `resource="`+r+`"`) {
				var n float64
				fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &n)
				counts[r] += int(n)
			}
		}
	}
	return counts
}

// settledAPIWatches is apiWatches once two readings agree: watches that
// clients just closed may take a moment to end on the server.
func (e *mcEnv) settledAPIWatches() map[string]int {
	e.t.Helper()
	last := e.apiWatches()
	for range 50 {
		time.Sleep(200 * time.Millisecond)
		now := e.apiWatches()
		if mapsEqual(now, last) {
			return now
		}
		last = now
	}
	e.t.Fatalf("the API server's watch counts do not settle: %v", last)
	return nil
}

// expectAPIWatches waits until the API server serves exactly delta more
// watches than before, and checks that it stays so for a second.
func (e *mcEnv) expectAPIWatches(before, delta map[string]int) {
	e.t.Helper()
	want := map[string]int{}
	for _, r := range mcWatched {
		want[r] = before[r] + delta[r]
	}
	var got map[string]int
	var last string
	eventually(ksReport{e.t, &last}, 10*time.Second, fmt.Sprintf("API server watches %v (before the server: %v)", want, before),
		func() bool { got = e.apiWatches(); last = fmt.Sprint(got); return mapsEqual(got, want) })
	for range 5 {
		time.Sleep(200 * time.Millisecond)
		if got = e.apiWatches(); !mapsEqual(got, want) {
			e.t.Fatalf("API server watches %v, want %v (before the server: %v)", got, want, before)
		}
	}
}

// mcCaches are the live caches connected through kubeconfig.
func mcCaches(kubeconfig string) []watchcache.Usage {
	var out []watchcache.Usage
	for _, u := range watchcache.InUse() {
		if u.Config.Kubeconfig == kubeconfig {
			out = append(out, u)
		}
	}
	return out
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// mcGauge reads an unlabelled gauge from the default registry.
func mcGauge(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
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
	eps := map[string][]ksEP{}
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("10.246.8.%d", i)
		cluster := []string{"cluster-a", "cluster-b"}[i%2]
		eps[cluster] = append(eps[cluster], ksEP{addr: ip})
		want = append(want, ksRR(name, "A", ip))
	}
	ports := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080)}
	for cluster, list := range eps {
		e.createSlice(ns, mcSlice("many-"+cluster, "many", cluster, ports, list...))
	}
	ksExpect(t, s, "tcp", name, dns.TypeA, ksAnswer(want...), ksSettle)

	udp := s.exchange(t, "udp", name, dns.TypeA)
	if !udp.Truncated || len(udp.Answer) >= n || udp.Rcode != dns.RcodeSuccess {
		t.Errorf("A over UDP without EDNS: TC %v, rcode %s, %d records; want TC set, NOERROR, fewer than %d records",
			udp.Truncated, dns.RcodeToString[udp.Rcode], len(udp.Answer), n)
	}
	firsts := map[string]bool{}
	for range 10 {
		r := s.exchange(t, "tcp", name, dns.TypeA)
		if len(r.Answer) != n {
			t.Fatalf("A over TCP: %d records, want %d", len(r.Answer), n)
		}
		firsts[r.Answer[0].String()] = true
	}
	if len(firsts) < 2 {
		t.Errorf("10 answers all started with %v: want the records rotated", firsts)
	}
}

// TestMulticlusterProgrammingLatency changes an import of each kind and
// checks that coredns_multicluster_dns_programming_duration_seconds
// counted both kinds.
func TestMulticlusterProgrammingLatency(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("latency")
	s := e.server(mcCorefile)
	before := mcProgrammedCounts(t)

	e.createImport(ns, mcClusterSetIP("vip", []string{"10.247.9.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	e.createImport(ns, mcHeadless("pods", mcPort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, mcSlice("pods-a", "pods", "cluster-a", nil, ksEP{addr: "10.246.9.10"}))
	ksExpect(t, s, "udp", mcSvc("vip", ns), dns.TypeA, ksAnswer(ksRR(mcSvc("vip", ns), "A", "10.247.9.10")), ksSettle)
	ksExpect(t, s, "udp", mcSvc("pods", ns), dns.TypeA, ksAnswer(ksRR(mcSvc("pods", ns), "A", "10.246.9.10")), ksSettle)

	after := mcProgrammedCounts(t)
	for _, kind := range []watchcache.ServiceKind{watchcache.KindClusterSetIP, watchcache.KindMulticlusterHeadless} {
		if after[string(kind)] <= before[string(kind)] {
			t.Errorf("programming latency for %s: %d observations before, %d after", kind, before[string(kind)], after[string(kind)])
		}
	}
}

// mcProgrammedCounts reads the sample counts of multicluster's programming
// latency histogram by service_kind.
func mcProgrammedCounts(t *testing.T) map[string]uint64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "coredns_multicluster_dns_programming_duration_seconds" {
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

// TestMulticlusterTransfer checks an AXFR of clusterset.local: SOA first
// and last, an import's records in between.
func TestMulticlusterTransfer(t *testing.T) {
	e := newMcEnv(t)
	ns := e.namespace("axfr")
	s := e.server(mcCorefile)

	e.createImport(ns, mcClusterSetIP("web", []string{"10.247.10.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	name := mcSvc("web", ns)
	must := ksParse([]string{
		ksRR(mcZone, "NS", "ns.dns.clusterset.local."),
		ksRR("ns.dns."+mcZone, "A", "127.0.0.1"),
		ksRR("dns-version."+mcZone, "TXT", `"1.0.0"`),
		ksRR(name, "A", "10.247.10.10"),
		ksRR("_http._tcp."+name, "SRV", "0 100 80 "+name),
	})
	soa := ksParse([]string{mcSOA(mcZone)})[0]
	var last string
	eventually(ksReport{t, &last}, ksSettle, "AXFR of "+mcZone+" with the import", func() bool {
		rrs, err := ksAXFR(s, mcZone)
		switch got := ksRender(rrs); {
		case err != nil:
			last = err.Error()
		case len(got) < 2 || got[0] != soa || got[len(got)-1] != soa:
			last = "not framed by the SOA:\n" + ksLines(got)
		default:
			last = ""
			for _, rr := range must {
				if !slices.Contains(got, rr) {
					last = "missing " + rr + " in:\n" + ksLines(got)
				}
			}
		}
		return last == ""
	})
	rrs, _ := ksAXFR(s, mcZone)
	for _, rr := range rrs {
		if dns.IsSubDomain(ksZone, rr.Header().Name) {
			t.Errorf("the transfer of %s holds %s", mcZone, rr)
		}
	}
}
