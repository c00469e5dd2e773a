package test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/test/kubeapi"
)

// Whole-server tests of the kubeschema plugin: objects are created through
// the real API server and the answers read back over UDP and TCP. Every
// answer is compared exactly: rcode, AA flag, question, and the Answer,
// Authority and Additional sections (sorted, serials of SOA records zeroed).
//
// Tests share the API server; each works in namespaces of its own and uses
// endpoint and pod addresses no other test uses (10.244.<test>.x,
// fd00:10:244:<test>::x), because PTR records and zone transfers are
// cluster-wide. Service IPs are allocated by the API server.

// Deadlines. Polls end as soon as DNS shows what is expected.
const (
	// ksSettle bounds how long a new object may take to show in DNS
	// (watch delivery plus one snapshot rebuild), on a loaded machine.
	ksSettle = 30 * time.Second
	// ksChange bounds how long a change of an object may take to show.
	ksChange = 20 * time.Second
)

// The zones served.
const (
	ksZone = "cluster.local."
	ksRev4 = "in-addr.arpa."
	ksRev6 = "ip6.arpa."
)

// ksEnv is one test's access to the shared API server.
type ksEnv struct {
	t    *testing.T
	ctx  context.Context
	kube kubernetes.Interface
	// kubeconfig is the admin kubeconfig the DNS server uses.
	kubeconfig string
}

func newKsEnv(t *testing.T) *ksEnv {
	t.Helper()
	c := kubeapi.Shared(t)
	return &ksEnv{t: t, ctx: t.Context(), kube: c.Client(), kubeconfig: c.Kubeconfig}
}

// namespace creates a namespace named after prefix. Nothing deletes a
// namespace's content here (no controller runs), so its Services,
// EndpointSlices and Pods are deleted when the test ends: they would stay
// in other tests' PTR records and zone transfers.
func (e *ksEnv) namespace(prefix string) string {
	e.t.Helper()
	ns, err := e.kube.CoreV1().Namespaces().Create(e.ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ks-" + prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create namespace: %v", err)
	}
	e.t.Cleanup(func() { e.emptyNamespace(ns.Name) })
	return ns.Name
}

// emptyNamespace deletes what the tests create in ns, and ns itself.
func (e *ksEnv) emptyNamespace(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	core, all := e.kube.CoreV1(), metav1.ListOptions{}
	var errs []error
	svcs, err := core.Services(ns).List(ctx, all)
	errs = append(errs, err)
	if err == nil {
		for _, s := range svcs.Items {
			errs = append(errs, core.Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}))
		}
	}
	errs = append(errs,
		e.kube.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		core.Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	if err := errors.Join(errs...); err != nil {
		e.t.Logf("clean up namespace %s: %v", ns, err)
	}
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

func (e *ksEnv) createService(ns string, svc *corev1.Service) *corev1.Service {
	e.t.Helper()
	out, err := e.kube.CoreV1().Services(ns).Create(e.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create service %s/%s: %v", ns, svc.Name, err)
	}
	return out
}

// updateService applies change to the current version of the service.
func (e *ksEnv) updateService(ns, name string, change func(*corev1.Service)) {
	e.t.Helper()
	svcs := e.kube.CoreV1().Services(ns)
	svc, err := svcs.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get service %s/%s: %v", ns, name, err)
	}
	change(svc)
	if _, err := svcs.Update(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update service %s/%s: %v", ns, name, err)
	}
}

func (e *ksEnv) deleteService(ns, name string) {
	e.t.Helper()
	if err := e.kube.CoreV1().Services(ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete service %s/%s: %v", ns, name, err)
	}
}

func (e *ksEnv) createSlice(ns string, s *discoveryv1.EndpointSlice) {
	e.t.Helper()
	if _, err := e.kube.DiscoveryV1().EndpointSlices(ns).Create(e.ctx, s, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create endpointslice %s/%s: %v", ns, s.Name, err)
	}
}

// replaceEndpoints gives the slice ns/name the endpoints eps.
func (e *ksEnv) replaceEndpoints(ns, name string, eps ...ksEP) {
	e.t.Helper()
	api := e.kube.DiscoveryV1().EndpointSlices(ns)
	s, err := api.Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get endpointslice %s/%s: %v", ns, name, err)
	}
	s.Endpoints = ksEndpoints(eps)
	if _, err := api.Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update endpointslice %s/%s: %v", ns, name, err)
	}
}

// createPod creates a pod and gives it ips in its status: no kubelet runs.
func (e *ksEnv) createPod(ns, name string, ips ...string) {
	e.t.Helper()
	pods := e.kube.CoreV1().Pods(ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}
	pod, err := pods.Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	pod.Status.PodIP = ips[0]
	for _, ip := range ips {
		pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if _, err := pods.UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("set pod %s/%s IPs: %v", ns, name, err)
	}
}

func (e *ksEnv) deletePod(ns, name string) {
	e.t.Helper()
	if err := e.kube.CoreV1().Pods(ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
}

// Objects.

func ksPort(name string, proto corev1.Protocol, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: port}
}

// ksClusterIP is a ClusterIP service (IPv4 single-stack unless changed).
func ksClusterIP(name string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Ports: ports, Selector: map[string]string{"app": name}},
	}
}

// ksHeadless is a dual-stack headless service with a selector.
func ksHeadless(name string, ports ...corev1.ServicePort) *corev1.Service {
	svc := ksClusterIP(name, ports...)
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyRequireDualStack)
	return svc
}

// ksEP is one endpoint of a slice.
type ksEP struct {
	addr, hostname, pod string
	unready             bool
	terminating         bool
}

func ksSlicePort(name string, proto corev1.Protocol, port int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: new(name), Protocol: new(proto), Port: new(port)}
}

// ksSlice is an EndpointSlice of service svc; its address type is the
// family of the first endpoint.
func ksSlice(name, svc string, ports []discoveryv1.EndpointPort, eps ...ksEP) *discoveryv1.EndpointSlice {
	at := discoveryv1.AddressTypeIPv4
	if len(eps) > 0 && strings.Contains(eps[0].addr, ":") {
		at = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: at,
		Ports:       ports,
		Endpoints:   ksEndpoints(eps),
	}
}

func ksEndpoints(eps []ksEP) []discoveryv1.Endpoint {
	out := make([]discoveryv1.Endpoint, 0, len(eps))
	for _, ep := range eps {
		e := discoveryv1.Endpoint{
			Addresses: []string{ep.addr},
			Conditions: discoveryv1.EndpointConditions{
				Ready:       new(!ep.unready),
				Serving:     new(!ep.unready || ep.terminating),
				Terminating: new(ep.terminating),
			},
		}
		if ep.hostname != "" {
			e.Hostname = new(ep.hostname)
		}
		if ep.pod != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: ep.pod}
		}
		out = append(out, e)
	}
	return out
}

// Names and records.

// ksSvc is the name of service svc in namespace ns.
func ksSvc(svc, ns string) string { return svc + "." + ns + ".svc." + ksZone }

// ksRR is a record with the plugin's default TTL, as a zone file line.
func ksRR(owner, rrtype, rdata string) string { return owner + " 5 IN " + rrtype + " " + rdata }

// ksAddrRR is the A or AAAA record of ip.
func ksAddrRR(owner, ip string) string {
	if strings.Contains(ip, ":") {
		return ksRR(owner, "AAAA", ip)
	}
	return ksRR(owner, "A", ip)
}

// ksAddrType is the type of ksAddrRR's record.
func ksAddrType(ip string) uint16 {
	if strings.Contains(ip, ":") {
		return dns.TypeAAAA
	}
	return dns.TypeA
}

// ksSOA is the SOA of zone as negative answers carry it, serial zeroed.
func ksSOA(zone string) string {
	return ksRR(zone, "SOA", "ns.dns.cluster.local. hostmaster.cluster.local. 0 7200 1800 86400 5")
}

// ksPTRName is the reverse name of ip.
func ksPTRName(t testing.TB, ip string) string {
	t.Helper()
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatalf("reverse of %q: %v", ip, err)
	}
	return name
}

// ksClusterIPs returns the service's allocated cluster IPs, IPv4 first.
func ksClusterIPs(svc *corev1.Service) []string {
	ips := slices.Clone(svc.Spec.ClusterIPs)
	slices.SortFunc(ips, func(a, b string) int { return strings.Count(a, ":") - strings.Count(b, ":") })
	return ips
}

// Expected replies.

// ksWant is an expected reply. Records are zone file lines; each section
// is compared as a set unless ordered is set.
type ksWant struct {
	rcode                    int
	answer, authority, extra []string
	// ordered compares the Answer section in order (a CNAME and then its
	// target's records).
	ordered bool
}

func ksAnswer(rrs ...string) ksWant { return ksWant{answer: rrs} }

// withExtra is w with an Additional section.
func (w ksWant) withExtra(rrs ...string) ksWant { w.extra = rrs; return w }

// ksNXDOMAIN is the negative answer for a name that does not exist.
func ksNXDOMAIN(zone string) ksWant {
	return ksWant{rcode: dns.RcodeNameError, authority: []string{ksSOA(zone)}}
}

// ksNODATA is the negative answer for a name without records of the type.
func ksNODATA(zone string) ksWant { return ksWant{authority: []string{ksSOA(zone)}} }

// ksCase is one query and its expected reply.
type ksCase struct {
	name  string
	qtype uint16
	want  ksWant
}

// ksCheck polls every case over network until its reply is exactly as
// wanted.
func ksCheck(t *testing.T, s *server, network string, cases []ksCase) {
	t.Helper()
	for _, c := range cases {
		ksExpect(t, s, network, c.name, c.qtype, c.want, ksSettle)
	}
}

// ksExpect polls name/qtype over network until the reply is exactly want;
// on timeout the last difference is reported.
func ksExpect(t *testing.T, s *server, network, name string, qtype uint16, want ksWant, within time.Duration) {
	t.Helper()
	var last string
	what := fmt.Sprintf("%s %s over %s", name, dns.TypeToString[qtype], network)
	eventually(ksReport{t, &last}, within, what, func() bool {
		last = ksDiff(s.exchange(t, network, name, qtype), name, want)
		return last == ""
	})
}

// ksReport makes a failed eventually() show the last difference.
type ksReport struct {
	*testing.T
	last *string
}

func (r ksReport) Fatalf(format string, args ...any) {
	r.T.Helper()
	r.T.Fatalf(format+"; the last reply differed:\n%s", append(args, *r.last)...)
}

// ksDiff describes how reply differs from want; "" when it does not.
func ksDiff(reply *dns.Msg, asked string, want ksWant) string {
	var b strings.Builder
	if reply.Rcode != want.rcode {
		fmt.Fprintf(&b, "rcode %s, want %s\n", dns.RcodeToString[reply.Rcode], dns.RcodeToString[want.rcode])
	}
	if !reply.Authoritative {
		b.WriteString("AA flag not set\n")
	}
	if reply.Truncated {
		b.WriteString("TC flag set\n")
	}
	if len(reply.Question) != 1 || reply.Question[0].Name != asked {
		fmt.Fprintf(&b, "question %v, want %s\n", reply.Question, asked)
	}
	sections := []struct {
		name    string
		got     []dns.RR
		want    []string
		inOrder bool
	}{
		{"answer", reply.Answer, want.answer, want.ordered},
		{"authority", reply.Ns, want.authority, false},
		{"additional", reply.Extra, want.extra, false},
	}
	for _, sec := range sections {
		got, exp := ksRender(sec.got), ksParse(sec.want)
		if !sec.inOrder {
			slices.Sort(got)
			slices.Sort(exp)
		}
		if !slices.Equal(got, exp) {
			fmt.Fprintf(&b, "%s section:\n  got:\n%s  want:\n%s", sec.name, ksLines(got), ksLines(exp))
		}
	}
	return b.String()
}

// ksRender prints records, with the serial of SOA records zeroed: it is a
// timestamp.
func ksRender(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		if soa, ok := rr.(*dns.SOA); ok {
			c := *soa
			c.Serial = 0
			rr = &c
		}
		out = append(out, rr.String())
	}
	return out
}

// ksParse prints zone file lines the way dns.RR.String does.
func ksParse(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		rr, err := dns.NewRR(l)
		if err != nil || rr == nil {
			out = append(out, fmt.Sprintf("<bad expected record %q: %v>", l, err))
			continue
		}
		out = append(out, rr.String())
	}
	return out
}

func ksLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// ksSerial is the current SOA serial of cluster.local.
func ksSerial(t *testing.T, s *server) uint32 {
	t.Helper()
	r := s.exchange(t, "udp", ksZone, dns.TypeSOA)
	if len(r.Answer) != 1 {
		t.Fatalf("SOA query: want one record, got:\n%s", rrStrings(r.Answer))
	}
	return r.Answer[0].(*dns.SOA).Serial
}

// The tests.

// TestKubeschemaApex checks the records of the zone itself: the schema
// version, SOA and NS with the nameserver's address, and a SOA serial that
// moves when the cluster changes.
func TestKubeschemaApex(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("apex")
	s := e.server([]string{"pods verified"})

	nsA := ksRR("ns.dns.cluster.local.", "A", "127.0.0.1")
	ksCheck(t, s, "udp", []ksCase{
		{"dns-version." + ksZone, dns.TypeTXT, ksAnswer(ksRR("dns-version."+ksZone, "TXT", `"1.1.0"`))},
		{"dns-version." + ksZone, dns.TypeA, ksNODATA(ksZone)},
		{ksZone, dns.TypeSOA, ksAnswer(ksSOA(ksZone))},
		{ksZone, dns.TypeNS, ksAnswer(ksRR(ksZone, "NS", "ns.dns.cluster.local.")).withExtra(nsA)},
		{ksZone, dns.TypeA, ksNODATA(ksZone)},
		{"ns.dns." + ksZone, dns.TypeA, ksAnswer(nsA)},
		{"dns." + ksZone, dns.TypeA, ksNODATA(ksZone)},
		{"svc." + ksZone, dns.TypeA, ksNODATA(ksZone)},
		{ksRev4, dns.TypeSOA, ksAnswer(ksSOA(ksRev4))},
		{ksRev6, dns.TypeNS, ksAnswer(ksRR(ksRev6, "NS", "ns.dns.cluster.local."))},
		{"nothing-here." + ksZone, dns.TypeA, ksNXDOMAIN(ksZone)},
	})
	ksExpect(t, s, "tcp", "dns-version."+ksZone, dns.TypeTXT, ksAnswer(ksRR("dns-version."+ksZone, "TXT", `"1.1.0"`)), ksSettle)

	before := ksSerial(t, s)
	svc := e.createService(ns, ksClusterIP("serial", ksPort("http", corev1.ProtocolTCP, 80)))
	ksExpect(t, s, "udp", ksSvc("serial", ns), dns.TypeA, ksAnswer(ksRR(ksSvc("serial", ns), "A", svc.Spec.ClusterIP)), ksSettle)
	if after := ksSerial(t, s); after <= before {
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
	web := e.createService(ns, ksClusterIP("web",
		ksPort("http", corev1.ProtocolTCP, 80), ksPort("dns", corev1.ProtocolUDP, 53), ksPort("dns-tcp", corev1.ProtocolTCP, 53)))
	plain := e.createService(ns, ksClusterIP("plain", ksPort("", corev1.ProtocolTCP, 8080)))

	name, ip := ksSvc("web", ns), web.Spec.ClusterIP
	a := ksRR(name, "A", ip)
	srvHTTP := ksRR("_http._tcp."+name, "SRV", "0 100 80 "+name)
	srvDNS := ksRR("_dns._udp."+name, "SRV", "0 100 53 "+name)
	srvDNSTCP := ksRR("_dns-tcp._tcp."+name, "SRV", "0 100 53 "+name)
	plainName := ksSvc("plain", ns)
	ksCheck(t, s, "udp", []ksCase{
		{name, dns.TypeA, ksAnswer(a)},
		{name, dns.TypeAAAA, ksNODATA(ksZone)},
		{name, dns.TypeTXT, ksNODATA(ksZone)},
		{"_http._tcp." + name, dns.TypeSRV, ksAnswer(srvHTTP).withExtra(a)},
		{"_dns._udp." + name, dns.TypeSRV, ksAnswer(srvDNS).withExtra(a)},
		{"_dns-tcp._tcp." + name, dns.TypeSRV, ksAnswer(srvDNSTCP).withExtra(a)},
		{name, dns.TypeSRV, ksAnswer(srvHTTP, srvDNS, srvDNSTCP).withExtra(a)},
		{"_http._tcp." + name, dns.TypeA, ksNODATA(ksZone)},
		{"_dns._tcp." + name, dns.TypeSRV, ksNXDOMAIN(ksZone)},
		{"_tcp." + name, dns.TypeSRV, ksNODATA(ksZone)},
		{"_sctp." + name, dns.TypeSRV, ksNXDOMAIN(ksZone)},
		{"host." + name, dns.TypeA, ksNXDOMAIN(ksZone)},
		{ksPTRName(t, ip), dns.TypePTR, ksAnswer(ksRR(ksPTRName(t, ip), "PTR", name))},
		{plainName, dns.TypeA, ksAnswer(ksRR(plainName, "A", plain.Spec.ClusterIP))},
		{plainName, dns.TypeSRV, ksNODATA(ksZone)},
		{"_tcp." + plainName, dns.TypeSRV, ksNXDOMAIN(ksZone)},
		{ksPTRName(t, plain.Spec.ClusterIP), dns.TypePTR, ksAnswer(ksRR(ksPTRName(t, plain.Spec.ClusterIP), "PTR", plainName))},
		{ns + ".svc." + ksZone, dns.TypeA, ksNODATA(ksZone)},
		{"missing." + ns + ".svc." + ksZone, dns.TypeA, ksNXDOMAIN(ksZone)},
		{"web.no-such-namespace.svc." + ksZone, dns.TypeA, ksNXDOMAIN(ksZone)},
	})
	ksExpect(t, s, "tcp", name, dns.TypeSRV, ksAnswer(srvHTTP, srvDNS, srvDNSTCP).withExtra(a), ksSettle)
}

// TestKubeschemaDualStack checks A and AAAA of a dual-stack service, an
// IPv6-only service (A is NODATA) and ip6.arpa PTR records.
func TestKubeschemaDualStack(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("dualstack")
	s := e.server([]string{"pods verified"})

	dual := ksClusterIP("dual", ksPort("http", corev1.ProtocolTCP, 80))
	dual.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyRequireDualStack)
	dual = e.createService(ns, dual)
	v6 := ksClusterIP("v6", ksPort("http", corev1.ProtocolTCP, 80))
	v6.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicySingleStack)
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	v6 = e.createService(ns, v6)

	dualIPs, v6IP := ksClusterIPs(dual), v6.Spec.ClusterIP
	if len(dualIPs) != 2 || !strings.Contains(v6IP, ":") {
		t.Fatalf("cluster IPs: dual-stack %v, IPv6-only %s", dualIPs, v6IP)
	}
	dualName, v6Name := ksSvc("dual", ns), ksSvc("v6", ns)
	dualA, dualAAAA := ksRR(dualName, "A", dualIPs[0]), ksRR(dualName, "AAAA", dualIPs[1])
	v6AAAA := ksRR(v6Name, "AAAA", v6IP)
	ksCheck(t, s, "udp", []ksCase{
		{dualName, dns.TypeA, ksAnswer(dualA)},
		{dualName, dns.TypeAAAA, ksAnswer(dualAAAA)},
		{dualName, dns.TypeSRV, ksAnswer(ksRR("_http._tcp."+dualName, "SRV", "0 100 80 "+dualName)).withExtra(dualA, dualAAAA)},
		{v6Name, dns.TypeA, ksNODATA(ksZone)},
		{v6Name, dns.TypeAAAA, ksAnswer(v6AAAA)},
		{v6Name, dns.TypeSRV, ksAnswer(ksRR("_http._tcp."+v6Name, "SRV", "0 100 80 "+v6Name)).withExtra(v6AAAA)},
		{ksPTRName(t, dualIPs[0]), dns.TypePTR, ksAnswer(ksRR(ksPTRName(t, dualIPs[0]), "PTR", dualName))},
		{ksPTRName(t, dualIPs[1]), dns.TypePTR, ksAnswer(ksRR(ksPTRName(t, dualIPs[1]), "PTR", dualName))},
		{ksPTRName(t, v6IP), dns.TypePTR, ksAnswer(ksRR(ksPTRName(t, v6IP), "PTR", v6Name))},
		{ksPTRName(t, "fd00:10:96::ffff"), dns.TypePTR, ksNXDOMAIN(ksRev6)},
	})
}

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

	e.createService(ns, ksHeadless("db", ksPort("http", corev1.ProtocolTCP, 80), ksPort("dns", corev1.ProtocolUDP, 53)))
	// Headless clients connect to the endpoints' ports, not the service's.
	ports := []discoveryv1.EndpointPort{
		ksSlicePort("http", corev1.ProtocolTCP, 8080), ksSlicePort("dns", corev1.ProtocolUDP, 5353),
	}
	// The IPv6 slice comes last: once DNS shows it, the others are seen
	// too (one watch delivers slices in order).
	e.createSlice(ns, ksSlice("db-ipv4", "db", ports,
		ksEP{addr: "10.244.1.10", hostname: "pet-0", pod: "db-0"}, ksEP{addr: "10.244.1.11", pod: "db-1"}))
	e.createSlice(ns, ksSlice("db-ipv4-moved", "db", ports, ksEP{addr: "10.244.1.11", pod: "db-1"}))
	e.createSlice(ns, ksSlice("db-ipv6", "db", ports,
		ksEP{addr: "fd00:10:244:1::10", hostname: "pet-0", pod: "db-0"}, ksEP{addr: "fd00:10:244:1::11", pod: "db-1"}))

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
			cases := []ksCase{{svc, dns.TypeAAAA, ksAnswer(ksAddrRR(svc, "fd00:10:244:1::10"), ksAddrRR(svc, "fd00:10:244:1::11"))}}
			for host, ips := range targets {
				srvHTTP = append(srvHTTP, ksRR("_http._tcp."+svc, "SRV", "0 "+weight+" 8080 "+host))
				srvDNS = append(srvDNS, ksRR("_dns._udp."+svc, "SRV", "0 "+weight+" 5353 "+host))
				for _, ip := range ips {
					rr := ksAddrRR(host, ip)
					extra = append(extra, rr)
					reverse := ksPTRName(t, ip)
					cases = append(cases,
						ksCase{host, ksAddrType(ip), ksAnswer(rr)},
						ksCase{reverse, dns.TypePTR, ksAnswer(ksRR(reverse, "PTR", host))})
				}
			}
			cases = append(cases,
				ksCase{svc, dns.TypeA, ksAnswer(ksAddrRR(svc, "10.244.1.10"), ksAddrRR(svc, "10.244.1.11"))},
				ksCase{"_http._tcp." + svc, dns.TypeSRV, ksAnswer(srvHTTP...).withExtra(extra...)},
				ksCase{"_dns._udp." + svc, dns.TypeSRV, ksAnswer(srvDNS...).withExtra(extra...)},
				ksCase{svc, dns.TypeSRV, ksAnswer(append(slices.Clone(srvHTTP), srvDNS...)...).withExtra(extra...)},
				ksCase{"_dns._tcp." + svc, dns.TypeSRV, ksNXDOMAIN(ksZone)},
				ksCase{tc.absent, dns.TypeA, ksNXDOMAIN(ksZone)},
				ksCase{"pet-1." + svc, dns.TypeA, ksNXDOMAIN(ksZone)},
				ksCase{ksPTRName(t, "10.244.1.12"), dns.TypePTR, ksNXDOMAIN(ksRev4)},
			)
			// Over TCP: the SRV answers with their Additional records
			// exceed the 512 bytes of UDP without EDNS.
			ksCheck(t, tc.s, "tcp", cases)
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

	ports := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080)}
	headless := func(name string, change func(*corev1.Service), eps ...ksEP) string {
		svc := ksHeadless(name, ksPort("http", corev1.ProtocolTCP, 80))
		change(svc)
		e.createService(ns, svc)
		e.createSlice(ns, ksSlice(name+"-1", name, ports, eps...))
		return ksSvc(name, ns)
	}
	plain := headless("plain", func(*corev1.Service) {},
		ksEP{addr: "10.244.2.1"}, ksEP{addr: "10.244.2.2", unready: true}, ksEP{addr: "10.244.2.3", unready: true, terminating: true})
	publish := headless("publish", func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true },
		// With publishNotReadyAddresses the controller marks every
		// endpoint ready, terminating ones included.
		ksEP{addr: "10.244.2.11"}, ksEP{addr: "10.244.2.12", unready: true}, ksEP{addr: "10.244.2.13", terminating: true})
	legacy := headless("legacy", func(s *corev1.Service) {
		s.Annotations = map[string]string{"service.alpha.kubernetes.io/tolerate-unready-endpoints": "true"}
	}, ksEP{addr: "10.244.2.21"}, ksEP{addr: "10.244.2.22", unready: true})
	draining := headless("draining", func(*corev1.Service) {}, ksEP{addr: "10.244.2.31", hostname: "last"})

	a := func(owner string, ips ...string) ksWant {
		var rrs []string
		for _, ip := range ips {
			rrs = append(rrs, ksAddrRR(owner, ip))
		}
		return ksAnswer(rrs...)
	}
	ksCheck(t, s, "udp", []ksCase{
		{plain, dns.TypeA, a(plain, "10.244.2.1")},
		{"10-244-2-1." + plain, dns.TypeA, a("10-244-2-1."+plain, "10.244.2.1")},
		{"10-244-2-2." + plain, dns.TypeA, ksNXDOMAIN(ksZone)},
		{ksPTRName(t, "10.244.2.2"), dns.TypePTR, ksNXDOMAIN(ksRev4)},
		{publish, dns.TypeA, a(publish, "10.244.2.11", "10.244.2.12")},
		{"10-244-2-12." + publish, dns.TypeA, a("10-244-2-12."+publish, "10.244.2.12")},
		{"10-244-2-13." + publish, dns.TypeA, ksNXDOMAIN(ksZone)},
		{ksPTRName(t, "10.244.2.13"), dns.TypePTR, ksNXDOMAIN(ksRev4)},
		{legacy, dns.TypeA, a(legacy, "10.244.2.21", "10.244.2.22")},
		{draining, dns.TypeA, a(draining, "10.244.2.31")},
	})

	// The last endpoint becomes unready: the service leaves DNS.
	e.replaceEndpoints(ns, "draining-1", ksEP{addr: "10.244.2.31", hostname: "last", unready: true, terminating: true})
	for _, c := range []ksCase{
		{draining, dns.TypeA, ksNXDOMAIN(ksZone)},
		{draining, dns.TypeSRV, ksNXDOMAIN(ksZone)},
		{"last." + draining, dns.TypeA, ksNXDOMAIN(ksZone)},
		{"_http._tcp." + draining, dns.TypeSRV, ksNXDOMAIN(ksZone)},
		{ksPTRName(t, "10.244.2.31"), dns.TypePTR, ksNXDOMAIN(ksRev4)},
	} {
		ksExpect(t, s, "udp", c.name, c.qtype, c.want, ksChange)
	}
	// And comes back when an endpoint is ready again.
	e.replaceEndpoints(ns, "draining-1", ksEP{addr: "10.244.2.32", hostname: "next"})
	ksExpect(t, s, "udp", "next."+draining, dns.TypeA, a("next."+draining, "10.244.2.32"), ksChange)
}

// TestKubeschemaExternalName checks that an ExternalName service pointing
// into cluster.local answers its CNAME followed by the target's records.
func TestKubeschemaExternalName(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("external")
	s := e.server([]string{"pods verified"})

	target := e.createService(ns, ksClusterIP("target", ksPort("http", corev1.ProtocolTCP, 80)))
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
	cname := ksRR(aliasName, "CNAME", targetName)
	danglingName := ksSvc("dangling", ns)
	ksCheck(t, s, "udp", []ksCase{
		{aliasName, dns.TypeA, ksWant{answer: []string{cname, ksRR(targetName, "A", target.Spec.ClusterIP)}, ordered: true}},
		{aliasName, dns.TypeCNAME, ksAnswer(cname)},
		// RFC 6604: the rcode is that of the last name of the chain.
		{danglingName, dns.TypeA, ksWant{rcode: dns.RcodeNameError,
			answer: []string{ksRR(danglingName, "CNAME", "gone."+ns+".svc.cluster.local.")}, authority: []string{ksSOA(ksZone)}}},
		{ksSvc("outside", ns), dns.TypeA, ksAnswer(ksRR(ksSvc("outside", ns), "CNAME", "www.example.com."))},
	})
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
	podName := func(label, namespace string) string { return label + "." + namespace + ".pod." + ksZone }
	v4, v6 := podName("10-245-0-5", ns), podName("fd00-10-245--5", ns)
	ksCheck(t, verified, "udp", []ksCase{
		{v4, dns.TypeA, ksAnswer(ksRR(v4, "A", "10.245.0.5"))},
		{v4, dns.TypeAAAA, ksNODATA(ksZone)},
		{v6, dns.TypeAAAA, ksAnswer(ksRR(v6, "AAAA", "fd00:10:245::5"))},
		{podName("10-245-0-5", other), dns.TypeA, ksNXDOMAIN(ksZone)},
		{podName("10-245-0-6", ns), dns.TypeA, ksNXDOMAIN(ksZone)},
		{ns + ".pod." + ksZone, dns.TypeA, ksNODATA(ksZone)},
		{podName("not-an-ip", ns), dns.TypeA, ksNXDOMAIN(ksZone)},
	})
	unknown := podName("10-245-0-6", other)
	ksCheck(t, insecure, "udp", []ksCase{
		{v4, dns.TypeA, ksAnswer(ksRR(v4, "A", "10.245.0.5"))},
		{unknown, dns.TypeA, ksAnswer(ksRR(unknown, "A", "10.245.0.6"))},
	})
	ksCheck(t, disabled, "udp", []ksCase{
		{"dns-version." + ksZone, dns.TypeTXT, ksAnswer(ksRR("dns-version."+ksZone, "TXT", `"1.1.0"`))},
		{v4, dns.TypeA, ksNXDOMAIN(ksZone)},
		{unknown, dns.TypeA, ksNXDOMAIN(ksZone)},
		{ns + ".pod." + ksZone, dns.TypeA, ksNXDOMAIN(ksZone)},
	})

	e.deletePod(ns, "p")
	ksExpect(t, verified, "udp", v4, dns.TypeA, ksNXDOMAIN(ksZone), ksChange)
}

// TestKubeschemaChanges checks that updates reach DNS within ksChange: a
// new port, a deleted service, new endpoints, a deleted slice.
func TestKubeschemaChanges(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("changes")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, ksClusterIP("svc", ksPort("http", corev1.ProtocolTCP, 80)))
	name, ip := ksSvc("svc", ns), svc.Spec.ClusterIP
	a := ksRR(name, "A", ip)
	srvHTTP := ksRR("_http._tcp."+name, "SRV", "0 100 80 "+name)
	ksExpect(t, s, "udp", name, dns.TypeSRV, ksAnswer(srvHTTP).withExtra(a), ksSettle)

	change := func(what string, do func(), cases ...ksCase) {
		t.Helper()
		begin := time.Now()
		do()
		for _, c := range cases {
			ksExpect(t, s, "udp", c.name, c.qtype, c.want, ksChange)
		}
		t.Logf("%s: seen in DNS after %s", what, time.Since(begin).Round(time.Millisecond))
	}
	srvGRPC := ksRR("_grpc._tcp."+name, "SRV", "0 100 9090 "+name)
	change("new port", func() {
		e.updateService(ns, "svc", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, ksPort("grpc", corev1.ProtocolTCP, 9090))
		})
	},
		ksCase{"_grpc._tcp." + name, dns.TypeSRV, ksAnswer(srvGRPC).withExtra(a)},
		ksCase{name, dns.TypeSRV, ksAnswer(srvHTTP, srvGRPC).withExtra(a)})
	change("deleted service", func() { e.deleteService(ns, "svc") },
		ksCase{name, dns.TypeA, ksNXDOMAIN(ksZone)},
		ksCase{"_http._tcp." + name, dns.TypeSRV, ksNXDOMAIN(ksZone)},
		ksCase{ksPTRName(t, ip), dns.TypePTR, ksNXDOMAIN(ksRev4)})

	ports := []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080)}
	e.createService(ns, ksHeadless("pool", ksPort("http", corev1.ProtocolTCP, 80)))
	e.createSlice(ns, ksSlice("pool-1", "pool", ports, ksEP{addr: "10.244.3.1"}))
	pool := ksSvc("pool", ns)
	ksExpect(t, s, "udp", pool, dns.TypeA, ksAnswer(ksRR(pool, "A", "10.244.3.1")), ksSettle)
	change("new endpoint", func() { e.replaceEndpoints(ns, "pool-1", ksEP{addr: "10.244.3.1"}, ksEP{addr: "10.244.3.2"}) },
		ksCase{pool, dns.TypeA, ksAnswer(ksRR(pool, "A", "10.244.3.1"), ksRR(pool, "A", "10.244.3.2"))},
		ksCase{ksPTRName(t, "10.244.3.2"), dns.TypePTR, ksAnswer(ksRR(ksPTRName(t, "10.244.3.2"), "PTR", "10-244-3-2."+pool))})
	change("new slice", func() { e.createSlice(ns, ksSlice("pool-2", "pool", ports, ksEP{addr: "fd00:10:244:3::3"})) },
		ksCase{pool, dns.TypeAAAA, ksAnswer(ksRR(pool, "AAAA", "fd00:10:244:3::3"))})
	change("deleted slice", func() {
		if err := e.kube.DiscoveryV1().EndpointSlices(ns).Delete(e.ctx, "pool-1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete slice: %v", err)
		}
	},
		ksCase{pool, dns.TypeA, ksNODATA(ksZone)},
		ksCase{ksPTRName(t, "10.244.3.1"), dns.TypePTR, ksNXDOMAIN(ksRev4)})
}

// TestKubeschemaCase checks that names compare without case and that the
// answer repeats the question's spelling (0x20 randomisation).
func TestKubeschemaCase(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("case")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, ksClusterIP("web", ksPort("http", corev1.ProtocolTCP, 80)))
	ip := svc.Spec.ClusterIP
	ksExpect(t, s, "udp", ksSvc("web", ns), dns.TypeA, ksAnswer(ksRR(ksSvc("web", ns), "A", ip)), ksSettle)

	mixed := ksMixedCase(ksSvc("web", ns))
	ptr := strings.ToUpper(ksPTRName(t, ip))
	missing := ksMixedCase("nope." + ns + ".svc." + ksZone)
	ksCheck(t, s, "udp", []ksCase{
		{mixed, dns.TypeA, ksAnswer(ksRR(mixed, "A", ip))},
		{ksMixedCase("_HTTP._tcp.") + mixed, dns.TypeSRV, ksAnswer(
			ksRR(ksMixedCase("_HTTP._tcp.")+mixed, "SRV", "0 100 80 "+ksSvc("web", ns))).withExtra(ksRR(ksSvc("web", ns), "A", ip))},
		{ptr, dns.TypePTR, ksAnswer(ksRR(ptr, "PTR", ksSvc("web", ns)))},
		{missing, dns.TypeA, ksNXDOMAIN(ksZone)},
		{ksMixedCase("DNS-Version." + ksZone), dns.TypeTXT, ksAnswer(ksRR(ksMixedCase("DNS-Version."+ksZone), "TXT", `"1.1.0"`))},
	})
}

// ksMixedCase upper-cases every other letter.
func ksMixedCase(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		if 'a' <= b[i] && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// TestKubeschemaLargeAnswer checks a headless service with 60 ready
// endpoints: over UDP without EDNS the answer is truncated (TC), over TCP
// it is whole; and successive answers rotate their records.
func TestKubeschemaLargeAnswer(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("large")
	s := e.server([]string{"pods verified"})

	const n = 60
	e.createService(ns, ksHeadless("many", ksPort("http", corev1.ProtocolTCP, 80)))
	var eps []ksEP
	var want []string
	name := ksSvc("many", ns)
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("10.244.4.%d", i)
		eps = append(eps, ksEP{addr: ip})
		want = append(want, ksRR(name, "A", ip))
	}
	e.createSlice(ns, ksSlice("many-1", "many", []discoveryv1.EndpointPort{ksSlicePort("http", corev1.ProtocolTCP, 8080)}, eps...))
	ksExpect(t, s, "tcp", name, dns.TypeA, ksAnswer(want...), ksSettle)

	udp := s.exchange(t, "udp", name, dns.TypeA)
	if !udp.Truncated || len(udp.Answer) >= n || udp.Rcode != dns.RcodeSuccess {
		t.Errorf("A over UDP without EDNS: TC %v, rcode %s, %d records; want TC set, NOERROR, fewer than %d records",
			udp.Truncated, dns.RcodeToString[udp.Rcode], len(udp.Answer), n)
	}
	if m, err := ksExchangeEDNS(s, name, dns.TypeA, 4096); err != nil || m.Truncated || len(m.Answer) != n {
		t.Errorf("A over UDP with a 4096-byte EDNS buffer: want all %d records untruncated, got %v", n, ksSummary(m, err))
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

// ksExchangeEDNS queries over UDP with an EDNS0 buffer of size bytes.
func ksExchangeEDNS(s *server, name string, qtype, size uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(size, false)
	c := &dns.Client{Net: "udp", UDPSize: size, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, s.UDP)
	return r, err
}

func ksSummary(m *dns.Msg, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("TC %v, %d records", m.Truncated, len(m.Answer))
}

// TestKubeschemaTransfer checks an AXFR of cluster.local over TCP: SOA
// first and last, and the service's records in between.
func TestKubeschemaTransfer(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("axfr")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, ksClusterIP("web", ksPort("http", corev1.ProtocolTCP, 80)))
	name := ksSvc("web", ns)
	must := ksParse([]string{
		ksRR(ksZone, "NS", "ns.dns.cluster.local."),
		ksRR("ns.dns."+ksZone, "A", "127.0.0.1"),
		ksRR("dns-version."+ksZone, "TXT", `"1.1.0"`),
		ksRR(name, "A", svc.Spec.ClusterIP),
		ksRR("_http._tcp."+name, "SRV", "0 100 80 "+name),
	})
	var last string
	eventually(ksReport{t, &last}, ksSettle, "AXFR of "+ksZone+" with the service", func() bool {
		rrs, err := ksAXFR(s, ksZone)
		last = ksAXFRProblem(rrs, err, must)
		return last == ""
	})
}

// ksAXFR transfers zone over TCP.
func ksAXFR(s *server, zone string) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetAxfr(zone)
	ch, err := (&dns.Transfer{DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second}).In(m, s.TCP)
	if err != nil {
		return nil, err
	}
	var rrs []dns.RR
	for env := range ch {
		if env.Error != nil {
			return rrs, env.Error
		}
		rrs = append(rrs, env.RR...)
	}
	return rrs, nil
}

// ksAXFRProblem says what is wrong with a transfer; "" when nothing.
func ksAXFRProblem(rrs []dns.RR, err error, must []string) string {
	if err != nil {
		return err.Error()
	}
	if len(rrs) < 2 {
		return fmt.Sprintf("%d records", len(rrs))
	}
	got := ksRender(rrs)
	soa := ksParse([]string{ksSOA(ksZone)})[0]
	if got[0] != soa || got[len(got)-1] != soa {
		return "not framed by the SOA:\n" + ksLines(got)
	}
	for _, rr := range must {
		if !slices.Contains(got, rr) {
			return "missing " + rr + " in:\n" + ksLines(got)
		}
	}
	return ""
}

// TestKubeschemaFallthrough checks `fallthrough in-addr.arpa`: an unknown
// IPv4 PTR goes on down the chain (whoami answers it), a known one is
// answered by kubeschema, and other zones still get NXDOMAIN.
func TestKubeschemaFallthrough(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("fallthrough")
	s := e.server([]string{"pods verified", "fallthrough " + ksRev4}, "whoami")

	svc := e.createService(ns, ksClusterIP("web", ksPort("http", corev1.ProtocolTCP, 80)))
	known := ksPTRName(t, svc.Spec.ClusterIP)
	ksCheck(t, s, "udp", []ksCase{
		{known, dns.TypePTR, ksAnswer(ksRR(known, "PTR", ksSvc("web", ns)))},
		{ksPTRName(t, "fd00:10:96::ffff"), dns.TypePTR, ksNXDOMAIN(ksRev6)},
		{"nope." + ns + ".svc." + ksZone, dns.TypeA, ksNXDOMAIN(ksZone)},
	})

	for _, name := range []string{ksPTRName(t, "10.250.0.1"), "example.org."} {
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

// TestKubeschemaDig queries with the real dig, over UDP and TCP: an A, an
// SRV and a PTR record, and a name that does not exist.
func TestKubeschemaDig(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("dig")
	s := e.server([]string{"pods verified"})

	svc := e.createService(ns, ksClusterIP("web", ksPort("http", corev1.ProtocolTCP, 80)))
	name, ip := ksSvc("web", ns), svc.Spec.ClusterIP
	ksExpect(t, s, "udp", name, dns.TypeA, ksAnswer(ksRR(name, "A", ip)), ksSettle)

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
		{args: []string{"-x", ip}, status: "NOERROR", answer: []string{ksPTRName(t, ip) + " 5 IN PTR " + name}},
		{args: []string{"nope." + ns + ".svc." + ksZone, "A"}, status: "NXDOMAIN",
			authority: ksZone + " 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. "},
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
