package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Whole-server tests of the kubeschema plugin: objects are created through
// the real API server and the answers read back over UDP and TCP, every
// answer compared exactly (dnscheck_test.go).
//
// Tests share the API server; each works in namespaces of its own and uses
// endpoint and pod addresses no other test uses (10.244.<test>.x,
// fd00:10:244:<test>::x), because PTR records and zone transfers are
// cluster-wide. Service IPs are allocated by the API server.
//
// The tests are in three files: the records of services (this one), of
// endpoints and pods (kubeschema_endpoints_test.go), and the zone as a
// whole: changes, transfers, fallthrough (kubeschema_zone_test.go).

// ksEnv is the shared API server, with kubeschema's server.
type ksEnv struct{ *kubeEnv }

func newKsEnv(t *testing.T) *ksEnv {
	t.Helper()
	return &ksEnv{newKubeEnv(t)}
}

// namespace creates a namespace named ks-<prefix>-..., emptied when the
// test ends.
func (e *ksEnv) namespace(prefix string) string {
	e.t.Helper()
	return e.kubeEnv.namespace("ks-" + prefix)
}

// ksCorefile serves cluster.local and both reverse zones from the API
// server (kubeconfig, then more kubeschema options), with transfers
// allowed, then more plugins.
const ksCorefile = `.:0 {
    bind 127.0.0.1
    kubeschema cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        startup_timeout 60s
%s    }
    transfer {
        to *
    }
%s}
`

// server starts CoreDNS from ksCorefile: options are more lines of the
// kubeschema stanza, plugins more lines of the server block.
func (e *ksEnv) server(options []string, plugins ...string) *server {
	e.t.Helper()
	indent := func(lines []string, by string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(by + l + "\n")
		}
		return b.String()
	}
	return startServer(e.t, fmt.Sprintf(ksCorefile, e.kubeconfig, indent(options, "        "), indent(plugins, "    ")))
}

// Names and records of cluster.local.

// ksSvc is the name of service svc in namespace ns.
func ksSvc(svc, ns string) string { return svcName(svc, ns, clusterZone) }

// ksSOA is the SOA of zone as kubeschema's negative answers carry it,
// serial zeroed.
func ksSOA(zone string) string { return soaLine(zone, clusterZone) }

// ksNXDOMAIN is the negative answer for a name that does not exist.
func ksNXDOMAIN(zone string) wantReply { return nxdomain(ksSOA(zone)) }

// ksNODATA is the negative answer for a name without records of the type.
func ksNODATA(zone string) wantReply { return nodata(ksSOA(zone)) }

// The tests.

// TestKubeschemaApex checks the records of the zone itself: the schema
// version, SOA and NS with the nameserver's address, and a SOA serial that
// moves when the cluster changes.
func TestKubeschemaApex(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("apex")
	s := e.server([]string{"pods verified"})

	nsA := rrLine("ns.dns.cluster.local.", "A", "127.0.0.1")
	checkAll(t, s, "udp", []dnsCase{
		{"dns-version." + clusterZone, dns.TypeTXT, answer(rrLine("dns-version."+clusterZone, "TXT", `"1.1.0"`))},
		{"dns-version." + clusterZone, dns.TypeA, ksNODATA(clusterZone)},
		{clusterZone, dns.TypeSOA, answer(ksSOA(clusterZone))},
		{clusterZone, dns.TypeNS, answer(rrLine(clusterZone, "NS", "ns.dns.cluster.local.")).withExtra(nsA)},
		{clusterZone, dns.TypeA, ksNODATA(clusterZone)},
		{"ns.dns." + clusterZone, dns.TypeA, answer(nsA)},
		{"dns." + clusterZone, dns.TypeA, ksNODATA(clusterZone)},
		{"svc." + clusterZone, dns.TypeA, ksNODATA(clusterZone)},
		{reverse4Zone, dns.TypeSOA, answer(ksSOA(reverse4Zone))},
		{reverse6Zone, dns.TypeNS, answer(rrLine(reverse6Zone, "NS", "ns.dns.cluster.local."))},
		{"nothing-here." + clusterZone, dns.TypeA, ksNXDOMAIN(clusterZone)},
	})
	expect(t, s, "tcp", "dns-version."+clusterZone, dns.TypeTXT, answer(rrLine("dns-version."+clusterZone, "TXT", `"1.1.0"`)), settleTimeout)

	before := soaSerial(t, s, clusterZone)
	svc := e.createService(ns, clusterIPService("serial", servicePort("http", corev1.ProtocolTCP, 80)))
	expect(t, s, "udp", ksSvc("serial", ns), dns.TypeA, answer(rrLine(ksSvc("serial", ns), "A", svc.Spec.ClusterIP)), settleTimeout)
	if after := soaSerial(t, s, clusterZone); after <= before {
		t.Errorf("SOA serial %d after a new service, was %d: want it larger", after, before)
	}
}

// TestKubeschemaClusterIP checks a ClusterIP service: its A record, an SRV
// record per named port and on the bare name, with the A record in the
// Additional section, no SRV for an unnamed port, and PTR.
func TestKubeschemaClusterIP(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("clusterip")
	s := e.server([]string{"pods verified"})

	// The API requires every port of a multi-port service to be named, so
	// the unnamed port is the only port of a second service.
	web := e.createService(ns, clusterIPService("web",
		servicePort("http", corev1.ProtocolTCP, 80), servicePort("dns", corev1.ProtocolUDP, 53), servicePort("dns-tcp", corev1.ProtocolTCP, 53)))
	plain := e.createService(ns, clusterIPService("plain", servicePort("", corev1.ProtocolTCP, 8080)))

	name, ip := ksSvc("web", ns), web.Spec.ClusterIP
	a := rrLine(name, "A", ip)
	srvHTTP := rrLine("_http._tcp."+name, "SRV", "0 100 80 "+name)
	srvDNS := rrLine("_dns._udp."+name, "SRV", "0 100 53 "+name)
	srvDNSTCP := rrLine("_dns-tcp._tcp."+name, "SRV", "0 100 53 "+name)
	plainName := ksSvc("plain", ns)
	checkAll(t, s, "udp", []dnsCase{
		{name, dns.TypeA, answer(a)},
		{name, dns.TypeAAAA, ksNODATA(clusterZone)},
		{name, dns.TypeTXT, ksNODATA(clusterZone)},
		{"_http._tcp." + name, dns.TypeSRV, answer(srvHTTP).withExtra(a)},
		{"_dns._udp." + name, dns.TypeSRV, answer(srvDNS).withExtra(a)},
		{"_dns-tcp._tcp." + name, dns.TypeSRV, answer(srvDNSTCP).withExtra(a)},
		{name, dns.TypeSRV, answer(srvHTTP, srvDNS, srvDNSTCP).withExtra(a)},
		{"_http._tcp." + name, dns.TypeA, ksNODATA(clusterZone)},
		{"_dns._tcp." + name, dns.TypeSRV, ksNXDOMAIN(clusterZone)},
		{"_tcp." + name, dns.TypeSRV, ksNODATA(clusterZone)},
		{"_sctp." + name, dns.TypeSRV, ksNXDOMAIN(clusterZone)},
		{"host." + name, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{ptrName(t, ip), dns.TypePTR, answer(rrLine(ptrName(t, ip), "PTR", name))},
		{plainName, dns.TypeA, answer(rrLine(plainName, "A", plain.Spec.ClusterIP))},
		{plainName, dns.TypeSRV, ksNODATA(clusterZone)},
		{"_tcp." + plainName, dns.TypeSRV, ksNXDOMAIN(clusterZone)},
		{ptrName(t, plain.Spec.ClusterIP), dns.TypePTR, answer(rrLine(ptrName(t, plain.Spec.ClusterIP), "PTR", plainName))},
		{ns + ".svc." + clusterZone, dns.TypeA, ksNODATA(clusterZone)},
		{"missing." + ns + ".svc." + clusterZone, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{"web.no-such-namespace.svc." + clusterZone, dns.TypeA, ksNXDOMAIN(clusterZone)},
	})
	expect(t, s, "tcp", name, dns.TypeSRV, answer(srvHTTP, srvDNS, srvDNSTCP).withExtra(a), settleTimeout)
}

// TestKubeschemaDualStack checks A and AAAA of a dual-stack service, an
// IPv6-only service (A is NODATA) and ip6.arpa PTR records.
func TestKubeschemaDualStack(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("dualstack")
	s := e.server([]string{"pods verified"})

	dual := clusterIPService("dual", servicePort("http", corev1.ProtocolTCP, 80))
	dual.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyRequireDualStack)
	dual = e.createService(ns, dual)
	v6 := clusterIPService("v6", servicePort("http", corev1.ProtocolTCP, 80))
	v6.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicySingleStack)
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	v6 = e.createService(ns, v6)

	dualIPs, v6IP := clusterIPsOf(dual), v6.Spec.ClusterIP
	if len(dualIPs) != 2 || !strings.Contains(v6IP, ":") {
		t.Fatalf("cluster IPs: dual-stack %v, IPv6-only %s", dualIPs, v6IP)
	}
	dualName, v6Name := ksSvc("dual", ns), ksSvc("v6", ns)
	dualA, dualAAAA := rrLine(dualName, "A", dualIPs[0]), rrLine(dualName, "AAAA", dualIPs[1])
	v6AAAA := rrLine(v6Name, "AAAA", v6IP)
	checkAll(t, s, "udp", []dnsCase{
		{dualName, dns.TypeA, answer(dualA)},
		{dualName, dns.TypeAAAA, answer(dualAAAA)},
		{dualName, dns.TypeSRV, answer(rrLine("_http._tcp."+dualName, "SRV", "0 100 80 "+dualName)).withExtra(dualA, dualAAAA)},
		{v6Name, dns.TypeA, ksNODATA(clusterZone)},
		{v6Name, dns.TypeAAAA, answer(v6AAAA)},
		{v6Name, dns.TypeSRV, answer(rrLine("_http._tcp."+v6Name, "SRV", "0 100 80 "+v6Name)).withExtra(v6AAAA)},
		{ptrName(t, dualIPs[0]), dns.TypePTR, answer(rrLine(ptrName(t, dualIPs[0]), "PTR", dualName))},
		{ptrName(t, dualIPs[1]), dns.TypePTR, answer(rrLine(ptrName(t, dualIPs[1]), "PTR", dualName))},
		{ptrName(t, v6IP), dns.TypePTR, answer(rrLine(ptrName(t, v6IP), "PTR", v6Name))},
		{ptrName(t, "fd00:10:96::ffff"), dns.TypePTR, ksNXDOMAIN(reverse6Zone)},
	})
}

// TestKubeschemaExternalName checks that an ExternalName service pointing
// into cluster.local answers its CNAME followed by the target's records.
func TestKubeschemaExternalName(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("external")
	s := e.server([]string{"pods verified"})

	target := e.createService(ns, clusterIPService("target", servicePort("http", corev1.ProtocolTCP, 80)))
	alias := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "alias"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: strings.TrimSuffix(ksSvc("target", ns), ".")},
	}
	e.createService(ns, alias)
	dangling := alias.DeepCopy()
	dangling.Name, dangling.Spec.ExternalName = "dangling", "gone."+ns+".svc.cluster.local"
	e.createService(ns, dangling)
	outside := alias.DeepCopy()
	outside.Name, outside.Spec.ExternalName = "outside", "www.example.com"
	e.createService(ns, outside)

	aliasName, targetName := ksSvc("alias", ns), ksSvc("target", ns)
	cname := rrLine(aliasName, "CNAME", targetName)
	danglingName := ksSvc("dangling", ns)
	checkAll(t, s, "udp", []dnsCase{
		{aliasName, dns.TypeA, wantReply{answer: []string{cname, rrLine(targetName, "A", target.Spec.ClusterIP)}, ordered: true}},
		{aliasName, dns.TypeCNAME, answer(cname)},
		// RFC 6604: the rcode is that of the last name of the chain.
		{danglingName, dns.TypeA, wantReply{rcode: dns.RcodeNameError,
			answer: []string{rrLine(danglingName, "CNAME", "gone."+ns+".svc.cluster.local.")}, authority: []string{ksSOA(clusterZone)}}},
		{ksSvc("outside", ns), dns.TypeA, answer(rrLine(ksSvc("outside", ns), "CNAME", "www.example.com."))},
	})
}

// TestKubeschemaCase checks that names compare without case and that the
// answer repeats the question's spelling (0x20 randomisation).
func TestKubeschemaCase(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("case")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	ip := svc.Spec.ClusterIP
	expect(t, s, "udp", ksSvc("web", ns), dns.TypeA, answer(rrLine(ksSvc("web", ns), "A", ip)), settleTimeout)

	mixed := mixedCase(ksSvc("web", ns))
	ptr := strings.ToUpper(ptrName(t, ip))
	missing := mixedCase("nope." + ns + ".svc." + clusterZone)
	checkAll(t, s, "udp", []dnsCase{
		{mixed, dns.TypeA, answer(rrLine(mixed, "A", ip))},
		{mixedCase("_HTTP._tcp.") + mixed, dns.TypeSRV, answer(
			rrLine(mixedCase("_HTTP._tcp.")+mixed, "SRV", "0 100 80 "+ksSvc("web", ns))).withExtra(rrLine(ksSvc("web", ns), "A", ip))},
		{ptr, dns.TypePTR, answer(rrLine(ptr, "PTR", ksSvc("web", ns)))},
		{missing, dns.TypeA, ksNXDOMAIN(clusterZone)},
		{mixedCase("DNS-Version." + clusterZone), dns.TypeTXT, answer(rrLine(mixedCase("DNS-Version."+clusterZone), "TXT", `"1.1.0"`))},
	})
}

// TestKubeschemaDig queries with the real dig, over UDP and TCP: an A, an
// SRV and a PTR record, and a name that does not exist.
func TestKubeschemaDig(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("dig")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	name, ip := ksSvc("web", ns), svc.Spec.ClusterIP
	expect(t, s, "udp", name, dns.TypeA, answer(rrLine(name, "A", ip)), settleTimeout)

	for _, tc := range []struct {
		args      []string
		tcp       bool
		status    string
		answer    []string
		authority string // prefix of the one Authority line, if any
	}{
		{args: []string{name, "A"}, status: "NOERROR", answer: []string{name + " 5 IN A " + ip}},
		{args: []string{"_http._tcp." + name, "SRV"}, tcp: true, status: "NOERROR",
			answer: []string{"_http._tcp." + name + " 5 IN SRV 0 100 80 " + name}},
		{args: []string{"-x", ip}, status: "NOERROR", answer: []string{ptrName(t, ip) + " 5 IN PTR " + name}},
		{args: []string{"nope." + ns + ".svc." + clusterZone, "A"}, status: "NXDOMAIN",
			authority: clusterZone + " 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. "},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			network := "udp"
			if tc.tcp {
				network = "tcp"
			}
			r := digRun(t, s.addr(network), tc.tcp, tc.args...)
			if r.status != tc.status {
				t.Errorf("status %q, want %q", r.status, tc.status)
			}
			if !slices.Contains(r.flags, "aa") || !slices.Contains(r.flags, "qr") {
				t.Errorf("flags %v, want qr and aa", r.flags)
			}
			if !slices.Equal(r.answer, tc.answer) {
				t.Errorf("answer section %q, want %q", r.answer, tc.answer)
			}
			if tc.authority != "" && (len(r.authority) != 1 || !strings.HasPrefix(r.authority[0], tc.authority)) {
				t.Errorf("authority section %q, want one line starting %q", r.authority, tc.authority)
			}
			if t.Failed() {
				t.Logf("dig output:\n%s", r.out)
			}
		})
	}
}
