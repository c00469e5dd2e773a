package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/coredns/plugins"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Whole-server tests of k8s_external (plugin/k8sexternal): the stock
// Corefile line `k8s_external example.org` next to kubeschema, and the
// same Corefile with the stock kubernetes plugin instead, both giving the
// same exact answers for the same objects. Endpoint addresses are
// 10.244.40.x, external IPs 192.0.2.x and 2001:db8:40::x.

const extZone = "example.org."

// extCorefile: k8s_external (options), the backend (kubeschema or
// kubernetes) for cluster.local with the test kubeconfig (and options),
// then more plugins.
const extCorefile = `.:0 {
    bind 127.0.0.1
    k8s_external example.org {
%s    }
    %s cluster.local {
        kubeconfig %s
%s    }
%s}
`

// extConfig is what varies between the tests' Corefiles.
type extConfig struct {
	// backend is "kubeschema" or "kubernetes".
	backend string
	// options are lines of the k8s_external stanza, backendOptions of the
	// backend's, plugins of the server block.
	options, backendOptions, plugins []string
}

// extServer starts a server from extCorefile, stopped when t ends.
func (e *kubeEnv) extServer(t *testing.T, c extConfig) *server {
	t.Helper()
	lines := func(ls []string, indent string) string {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(indent + l + "\n")
		}
		return b.String()
	}
	return startServer(t, fmt.Sprintf(extCorefile, lines(c.options, "        "), c.backend, e.kubeconfig,
		lines(c.backendOptions, "        "), lines(c.plugins, "    ")))
}

// extName is a name of the external zone.
func extName(labels ...string) string { return strings.Join(labels, ".") + "." + extZone }

// extSOA is the zone's SOA, serial zeroed, with the default apex and TTL.
var extSOA = rrLine(extZone, "SOA", "ns1.dns."+extZone+" hostmaster.dns."+extZone+" 0 7200 1800 86400 5")

// extObjects creates, in a namespace of its own, the services the tests
// ask about; it returns the namespace.
//
//	lb:   ports http/TCP 80 and dns/UDP 53, load balancer ingress 192.0.2.10 and 2001:db8:40::10
//	ext:  port https/TCP 443, spec.externalIPs 192.0.2.20
//	none: a ClusterIP service without external IPs
//	hl:   headless, port http/TCP 80; a slice with web-0 (10.244.40.1) and an
//	      endpoint without hostname (10.244.40.2) on port 8080
//	bare: headless without ports or selector, spec.externalIPs 192.0.2.30
//	      (the stock README's example)
func (e *kubeEnv) extObjects() string {
	e.t.Helper()
	ns := e.namespace("ext")
	e.createService(ns, loadBalancerService("lb", servicePort("http", corev1.ProtocolTCP, 80), servicePort("dns", corev1.ProtocolUDP, 53)))
	e.setIngress(ns, "lb", "192.0.2.10", "2001:db8:40::10")
	ext := clusterIPService("ext", servicePort("https", corev1.ProtocolTCP, 443))
	ext.Spec.ExternalIPs = []string{"192.0.2.20"}
	e.createService(ns, ext)
	e.createService(ns, clusterIPService("none", servicePort("http", corev1.ProtocolTCP, 80)))
	hl := headlessService("hl", servicePort("http", corev1.ProtocolTCP, 80))
	hl.Spec.IPFamilyPolicy = nil
	e.createService(ns, hl)
	e.createSlice(ns, endpointSlice("hl-1", "hl", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
		endpoint{addr: "10.244.40.1", hostname: "web-0"}, endpoint{addr: "10.244.40.2"}))
	bare := headlessService("bare")
	bare.Spec.Selector, bare.Spec.IPFamilyPolicy = nil, nil
	bare.Spec.ExternalIPs = []string{"192.0.2.30"}
	e.createService(ns, bare)
	return ns
}

// loadBalancerService is a service of type LoadBalancer: only those may
// have ingress IPs in their status.
func loadBalancerService(name string, ports ...corev1.ServicePort) *corev1.Service {
	svc := clusterIPService(name, ports...)
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	return svc
}

// setIngress sets the service's load balancer ingress IPs (status), as a
// load balancer controller would; none clears them.
func (e *kubeEnv) setIngress(ns, name string, ips ...string) {
	e.t.Helper()
	svcs := e.kube.CoreV1().Services(ns)
	svc, err := svcs.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get service %s/%s: %v", ns, name, err)
	}
	svc.Status.LoadBalancer.Ingress = nil
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if _, err := svcs.UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("set load balancer status of %s/%s: %v", ns, name, err)
	}
}

// extBackends are the plugins k8s_external is tested with.
var extBackends = []string{"kubeschema", "kubernetes"}

// extNSAddrs is the name server's address records, owned by owner, that
// backend gives on a server bound to 127.0.0.1: kubeschema's name server
// is where the server listens; the stock plugin leaves loopback addresses
// out, so it has none. The one answer in which the backends differ.
func extNSAddrs(backend, owner string, ttl func(string) string) []string {
	if backend == "kubernetes" {
		return nil
	}
	return []string{ttl(rrLine(owner, "A", "127.0.0.1"))}
}

// sameTTL leaves a record line as it is.
func sameTTL(line string) string { return line }

// answerOrNodata is the answer rrs, or NODATA with soa when there are none.
func answerOrNodata(soa string, rrs []string) wantReply {
	if len(rrs) == 0 {
		return nodata(soa)
	}
	return answer(rrs...)
}

// TestK8sExternal: external IPs, SRV, the apex and the negative answers,
// with each backend, over UDP and TCP.
func TestK8sExternal(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.extObjects()
	for _, backend := range extBackends {
		t.Run(backend, func(t *testing.T) {
			s := e.extServer(t, extConfig{backend: backend})
			cases := extBasicCases(ns, backend)
			checkAll(t, s, "udp", cases)
			checkAll(t, s, "tcp", cases)
		})
	}
}

func extBasicCases(ns, backend string) []dnsCase {
	lb, ext, bare := extName("lb", ns), extName("ext", ns), extName("bare", ns)
	lbHTTP, nsName := extName("_http", "_tcp", "lb", ns), extName("ns1", "dns")
	nx, empty := nxdomain(extSOA), nodata(extSOA)
	return []dnsCase{
		// Load balancer ingress IPs, by family.
		{lb, dns.TypeA, answer(rrLine(lb, "A", "192.0.2.10"))},
		{lb, dns.TypeAAAA, answer(rrLine(lb, "AAAA", "2001:db8:40::10"))},
		// Every port, named or not, for the service name: two IPs by two
		// ports share the weight 100 (stock's arithmetic).
		{lb, dns.TypeSRV, answer(rrLine(lb, "SRV", "0 25 80 "+lb), rrLine(lb, "SRV", "0 25 53 "+lb)).
			withExtra(rrLine(lb, "A", "192.0.2.10"), rrLine(lb, "AAAA", "2001:db8:40::10"))},
		{lbHTTP, dns.TypeSRV, answer(rrLine(lbHTTP, "SRV", "0 50 80 "+lb)).
			withExtra(rrLine(lb, "A", "192.0.2.10"), rrLine(lb, "AAAA", "2001:db8:40::10"))},
		{extName("_http", "_udp", "lb", ns), dns.TypeSRV, nx},
		{lb, dns.TypeTXT, empty},
		// spec.externalIPs.
		{ext, dns.TypeA, answer(rrLine(ext, "A", "192.0.2.20"))},
		{ext, dns.TypeAAAA, empty},
		{extName("_https", "_tcp", "ext", ns), dns.TypeSRV, answer(rrLine(extName("_https", "_tcp", "ext", ns), "SRV", "0 100 443 "+ext)).
			withExtra(rrLine(ext, "A", "192.0.2.20"))},
		// A service without ports has addresses and no SRV record.
		{bare, dns.TypeA, answer(rrLine(bare, "A", "192.0.2.30"))},
		{bare, dns.TypeSRV, empty},
		// What does not exist: no external IP, no service, no namespace;
		// a headless service without the headless option.
		{extName("none", ns), dns.TypeA, nx},
		{extName("missing", ns), dns.TypeA, nx},
		{extName("lb", "no-such-ns"), dns.TypeA, nx},
		{extName("hl", ns), dns.TypeA, nx},
		{extName("x", "y", "z", "lb", ns), dns.TypeA, nx},
		// The namespace alone exists, without records.
		{extName(ns), dns.TypeA, empty},
		// The apex and the name server.
		{extZone, dns.TypeSOA, answer(extSOA)},
		{extZone, dns.TypeNS, answer(rrLine(extZone, "NS", nsName)).withExtra(extNSAddrs(backend, nsName, sameTTL)...)},
		{extZone, dns.TypeA, empty},
		{nsName, dns.TypeA, answerOrNodata(extSOA, extNSAddrs(backend, nsName, sameTTL))},
		{nsName, dns.TypeAAAA, empty},
		{extName("dns"), dns.TypeA, empty},
		{extName("ns2", "dns"), dns.TypeA, nx},
	}
}

// TestK8sExternalHeadlessFallthrough: `headless` serves the endpoints of
// headless services, by service name, hostname and port; `fallthrough`
// passes what does not exist to the next plugin (file); with each backend.
func TestK8sExternalHeadlessFallthrough(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.extObjects()
	zonefile := filepath.Join(t.TempDir(), "example.org.zone")
	zone := "$ORIGIN example.org.\n@ 60 IN SOA ns.file.example.org. admin.example.org. 1 7200 1800 86400 60\n" +
		"@ 60 IN NS ns.file.example.org.\nwww 60 IN A 192.0.2.80\n"
	if err := os.WriteFile(zonefile, []byte(zone), 0o600); err != nil {
		t.Fatal(err)
	}
	hl, web0, dashed := extName("hl", ns), extName("web-0", "hl", ns), extName("10-244-40-2", "hl", ns)
	hlHTTP := extName("_http", "_tcp", "hl", ns)
	srvs := func(owner string) wantReply {
		return answer(rrLine(owner, "SRV", "0 50 8080 "+web0), rrLine(owner, "SRV", "0 50 8080 "+dashed)).
			withExtra(rrLine(web0, "A", "10.244.40.1"), rrLine(dashed, "A", "10.244.40.2"))
	}
	www := extName("www")
	fileNX := nxdomain("example.org. 60 IN SOA ns.file.example.org. admin.example.org. 0 7200 1800 86400 60")
	cases := []dnsCase{
		{hl, dns.TypeA, answer(rrLine(hl, "A", "10.244.40.1"), rrLine(hl, "A", "10.244.40.2"))},
		{web0, dns.TypeA, answer(rrLine(web0, "A", "10.244.40.1"))},
		{dashed, dns.TypeA, answer(rrLine(dashed, "A", "10.244.40.2"))},
		{hl, dns.TypeSRV, srvs(hl)},
		{hlHTTP, dns.TypeSRV, srvs(hlHTTP)},
		// Services with external IPs keep them, headless ones too.
		{extName("lb", ns), dns.TypeA, answer(rrLine(extName("lb", ns), "A", "192.0.2.10"))},
		{extName("bare", ns), dns.TypeA, answer(rrLine(extName("bare", ns), "A", "192.0.2.30"))},
		// Fallthrough: NXDOMAIN here is the file's to answer; NODATA is ours.
		{www, dns.TypeA, wantReply{answer: []string{"www.example.org. 60 IN A 192.0.2.80"}, authority: []string{"example.org. 60 IN NS ns.file.example.org."}}},
		{extName("missing", ns), dns.TypeA, fileNX},
		{extName("web-1", "hl", ns), dns.TypeA, fileNX},
		{extName(ns), dns.TypeA, nodata(extSOA)},
	}
	for _, backend := range extBackends {
		t.Run(backend, func(t *testing.T) {
			s := e.extServer(t, extConfig{backend: backend, options: []string{"headless", "fallthrough"},
				plugins: []string{"file " + zonefile + " example.org"}})
			checkAll(t, s, "udp", cases)
		})
	}
}

// TestK8sExternalTTLApex: `ttl` sets every record's TTL and the SOA
// minimum, `apex` the name server's names; with each backend.
func TestK8sExternalTTLApex(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.extObjects()
	ttl := func(line string) string { return strings.Replace(line, " 5 IN ", " 30 IN ", 1) }
	soa := ttl(rrLine(extZone, "SOA", "ns1.ext."+extZone+" hostmaster.ext."+extZone+" 0 7200 1800 86400 30"))
	lb, lbHTTP, nsName := extName("lb", ns), extName("_http", "_tcp", "lb", ns), extName("ns1", "ext")
	cases := func(backend string) []dnsCase {
		return []dnsCase{
			{lb, dns.TypeA, answer(ttl(rrLine(lb, "A", "192.0.2.10")))},
			{lbHTTP, dns.TypeSRV, answer(ttl(rrLine(lbHTTP, "SRV", "0 50 80 "+lb))).
				withExtra(ttl(rrLine(lb, "A", "192.0.2.10")), ttl(rrLine(lb, "AAAA", "2001:db8:40::10")))},
			{extZone, dns.TypeSOA, answer(soa)},
			{extZone, dns.TypeNS, answer(ttl(rrLine(extZone, "NS", nsName))).withExtra(extNSAddrs(backend, nsName, ttl)...)},
			{nsName, dns.TypeA, answerOrNodata(soa, extNSAddrs(backend, nsName, ttl))},
			{extName("ns1", "dns"), dns.TypeA, nxdomain(soa)},
			{extName("missing", ns), dns.TypeA, nxdomain(soa)},
		}
	}
	for _, backend := range extBackends {
		t.Run(backend, func(t *testing.T) {
			s := e.extServer(t, extConfig{backend: backend, options: []string{"ttl 30", "apex ext"}})
			checkAll(t, s, "udp", cases(backend))
		})
	}
}

// TestK8sExternalNamespaces: the backend's namespace filter (`namespaces`)
// hides the services and the namespace of the others, as for its own zone.
func TestK8sExternalNamespaces(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.extObjects()
	lb := extName("lb", ns)
	for _, backend := range extBackends {
		t.Run(backend, func(t *testing.T) {
			hidden := e.extServer(t, extConfig{backend: backend, options: []string{"headless"}, backendOptions: []string{"namespaces default"}})
			shown := e.extServer(t, extConfig{backend: backend, backendOptions: []string{"namespaces default " + ns}})
			checkAll(t, shown, "udp", []dnsCase{{lb, dns.TypeA, answer(rrLine(lb, "A", "192.0.2.10"))}})
			checkAll(t, hidden, "udp", []dnsCase{
				{extName("default"), dns.TypeA, nodata(extSOA)}, // synced: the negatives below mean something
				{lb, dns.TypeA, nxdomain(extSOA)},
				{extName("hl", ns), dns.TypeA, nxdomain(extSOA)},
				{extName(ns), dns.TypeA, nxdomain(extSOA)},
			})
		})
	}
}

// TestK8sExternalChanges: a load balancer's ingress IPs show when its
// status gets them and go when it loses them, and the SOA serial moves on.
func TestK8sExternalChanges(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.namespace("ext-change")
	e.createService(ns, loadBalancerService("lb", servicePort("http", corev1.ProtocolTCP, 80)))
	s := e.extServer(t, extConfig{backend: "kubeschema"})
	lb := extName("lb", ns)
	expect(t, s, "udp", lb, dns.TypeA, nxdomain(extSOA), settleTimeout)
	before := soaSerial(t, s, extZone)
	e.setIngress(ns, "lb", "192.0.2.40")
	expect(t, s, "udp", lb, dns.TypeA, answer(rrLine(lb, "A", "192.0.2.40")), changeTimeout)
	if after := soaSerial(t, s, extZone); after <= before {
		t.Errorf("SOA serial %d after the change, %d before: want it larger", after, before)
	}
	e.setIngress(ns, "lb")
	expect(t, s, "udp", lb, dns.TypeA, nxdomain(extSOA), changeTimeout)
}

// TestK8sExternalNeedsBackend: without kubeschema or kubernetes in the
// server block, start-up fails with an error naming both.
func TestK8sExternalNeedsBackend(t *testing.T) {
	caddyMu.Lock()
	defer caddyMu.Unlock()
	dnsserver.Directives = plugins.Directives
	dnsserver.Quiet = true
	inst, err := caddy.Start(caddy.CaddyfileInput{ServerTypeName: "dns", Filepath: "Corefile",
		Contents: []byte(".:0 {\n    bind 127.0.0.1\n    k8s_external example.org\n    whoami\n}\n")})
	if err == nil {
		inst.Stop()
		inst.ShutdownCallbacks()
		t.Fatal("started without a backend")
	}
	if msg := err.Error(); !strings.Contains(msg, "k8s_external") || !strings.Contains(msg, "kubeschema") || !strings.Contains(msg, "kubernetes") {
		t.Errorf("error %q: want it to name k8s_external, kubeschema and kubernetes", msg)
	}
}

// TestK8sExternalTransfer: AXFR of the zone (transfer plugin) holds the
// apex and every name's records as queries get them, framed by the SOA,
// and is the same with both backends but for the name server's address.
func TestK8sExternalTransfer(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.extObjects()
	lb, hl, web0 := extName("lb", ns), extName("hl", ns), extName("web-0", "hl", ns)
	lbHTTP, hlHTTP, ext := extName("_http", "_tcp", "lb", ns), extName("_http", "_tcp", "hl", ns), extName("ext", ns)
	must := parseRRs([]string{
		rrLine(extZone, "NS", extName("ns1", "dns")),
		rrLine(lb, "A", "192.0.2.10"), rrLine(lb, "AAAA", "2001:db8:40::10"),
		rrLine(lb, "SRV", "0 25 80 "+lb), rrLine(lb, "SRV", "0 25 53 "+lb),
		rrLine(lbHTTP, "SRV", "0 50 80 "+lb), rrLine(extName("_dns", "_udp", "lb", ns), "SRV", "0 50 53 "+lb),
		rrLine(ext, "A", "192.0.2.20"), rrLine(extName("bare", ns), "A", "192.0.2.30"),
		rrLine(hl, "A", "10.244.40.1"), rrLine(hl, "A", "10.244.40.2"), rrLine(web0, "A", "10.244.40.1"),
		rrLine(hlHTTP, "SRV", "0 50 8080 "+web0),
	})
	got := map[string][]string{}
	for _, backend := range extBackends {
		t.Run(backend, func(t *testing.T) {
			s := e.extServer(t, extConfig{backend: backend, options: []string{"headless"},
				plugins: []string{"transfer {", "    to *", "}"}})
			var problem string
			eventually(diffReport{t, &problem}, settleTimeout, "AXFR of "+extZone, func() bool {
				rrs, err := axfr(s, extZone)
				problem = axfrProblem(rrs, err, extSOA, must)
				got[backend] = withoutNSAddrs(renderRRs(rrs))
				return problem == ""
			})
		})
	}
	for _, rr := range got["kubeschema"] {
		if strings.HasPrefix(rr, "_") && !strings.Contains(rr, "\tSRV\t") {
			t.Errorf("transfer has %s: an SRV name has SRV records only", rr)
		}
	}
	if !slices.Equal(got["kubeschema"], got["kubernetes"]) {
		t.Errorf("the transfers differ:\nkubeschema:\n%skubernetes:\n%s", indented(got["kubeschema"]), indented(got["kubernetes"]))
	}
}

// withoutNSAddrs is a transfer's records, sorted, without the name
// server's addresses (extNSAddrs: they differ by backend).
func withoutNSAddrs(rrs []string) []string {
	var out []string
	for _, rr := range rrs {
		if !strings.HasPrefix(rr, "ns1.dns."+extZone) {
			out = append(out, rr)
		}
	}
	slices.Sort(out)
	return out
}
