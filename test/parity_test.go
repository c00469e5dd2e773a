package test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Whole-server tests of the options kubeschema shares with stock CoreDNS
// 1.15's kubernetes plugin: each query is asked of both, from the same
// API server, and each reply is checked exactly. Where stock answers
// differently the case says so with its own expected reply: the
// differences are deliberate, and these tests keep them known.

// stockCorefile serves cluster.local and the reverse zones with the stock
// plugin (kubeconfig, then more options).
const stockCorefile = `.:0 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
%s    }
}
`

// stockServer starts the stock kubernetes plugin with more options.
func (e *ksEnv) stockServer(options []string) *server {
	e.t.Helper()
	var b strings.Builder
	for _, l := range options {
		b.WriteString("        " + l + "\n")
	}
	return startServer(e.t, fmt.Sprintf(stockCorefile, e.kubeconfig, b.String()))
}

// parityCase is a query, our reply, and stock's when it differs.
type parityCase struct {
	name  string
	qtype uint16
	want  wantReply
	// stock is stock's reply when it is not want; why says why ours
	// differs.
	stock *wantReply
	why   string
}

// checkParity checks every case against both servers.
func checkParity(t *testing.T, ours, stock *server, cases []parityCase) {
	t.Helper()
	for _, c := range cases {
		if c.stock != nil && c.why == "" {
			t.Errorf("%s %s: a difference from stock needs its reason", c.name, dns.TypeToString[c.qtype])
		}
		want := c.want
		if c.stock != nil {
			want = *c.stock
		}
		t.Run("ours "+c.name, func(t *testing.T) { expect(t, ours, "udp", c.name, c.qtype, c.want, settleTimeout) })
		t.Run("stock "+c.name, func(t *testing.T) { expect(t, stock, "udp", c.name, c.qtype, want, settleTimeout) })
	}
}

// TestZonalParity: the zonal option's names, as stock 1.15 defines them:
// a pin answers the endpoints of its zone (A, AAAA, SRV; NODATA for other
// types or an empty zone), a prefer widens to every endpoint when its zone
// is empty, a zone may span labels, ClusterIP services and unknown
// directives are NXDOMAIN, and without the option the names do not exist.
func TestZonalParity(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("zonal")
	ours, stock := e.server([]string{"zonal"}), e.stockServer([]string{"zonal"})
	plainOurs, plainStock := e.server(nil), e.stockServer(nil)

	e.createService(ns, headlessService("db", servicePort("pg", corev1.ProtocolTCP, 5432)))
	e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	e.createService(ns, headlessService("empty", servicePort("pg", corev1.ProtocolTCP, 5432)))
	ports := []discoveryv1.EndpointPort{slicePort("pg", corev1.ProtocolTCP, 5432)}
	e.createSlice(ns, endpointSlice("db-v4", "db", ports,
		endpoint{addr: "10.244.60.1", hostname: "pet-0", zone: "zone-a"},
		endpoint{addr: "10.244.60.2", zone: "Zone-B"},
		endpoint{addr: "10.244.60.3", zone: "corp.example.com"},
		endpoint{addr: "10.244.60.4"}))
	e.createSlice(ns, endpointSlice("db-v6", "db", ports, endpoint{addr: "fd00:10:244:60::1", zone: "zone-a"}))

	svc := ksSvc("db", ns)
	pinA, preferA := "zone-a.pin._zone."+svc, "zone-a.prefer._zone."+svc
	pinC, preferC := "zone-c.pin._zone."+svc, "zone-c.prefer._zone."+svc
	pinCorp := "corp.example.com.pin._zone." + svc
	pet0, v6host := "pet-0."+svc, "fd00-10-244-60--1."+svc
	nodata, nx := ksNODATA(clusterZone), ksNXDOMAIN(clusterZone)
	allV4 := func(owner string) wantReply {
		return answer(addrLine(owner, "10.244.60.1"), addrLine(owner, "10.244.60.2"), addrLine(owner, "10.244.60.3"), addrLine(owner, "10.244.60.4"))
	}
	checkParity(t, ours, stock, []parityCase{
		{name: svc, qtype: dns.TypeA, want: allV4(svc)},
		{name: pinA, qtype: dns.TypeA, want: answer(addrLine(pinA, "10.244.60.1"))},
		{name: pinA, qtype: dns.TypeAAAA, want: answer(addrLine(pinA, "fd00:10:244:60::1"))},
		{name: pinA, qtype: dns.TypeSRV, want: answer(
			rrLine(pinA, "SRV", "0 50 5432 "+pet0), rrLine(pinA, "SRV", "0 50 5432 "+v6host)).
			withExtra(addrLine(pet0, "10.244.60.1"), addrLine(v6host, "fd00:10:244:60::1"))},
		{name: pinCorp, qtype: dns.TypeA, want: answer(addrLine(pinCorp, "10.244.60.3"))},
		{name: "zone-b.pin._zone." + svc, qtype: dns.TypeA, want: answer(addrLine("zone-b.pin._zone."+svc, "10.244.60.2"))},
		{name: preferA, qtype: dns.TypeA, want: answer(addrLine(preferA, "10.244.60.1"))},
		{name: pinA, qtype: dns.TypeTXT, want: nodata},
		{name: pinC, qtype: dns.TypeA, want: nodata},
		{name: preferC, qtype: dns.TypeA, want: allV4(preferC)},
		{name: "zone-a.pin._zone." + ksSvc("web", ns), qtype: dns.TypeA, want: nx},
		{name: "zone-a.pin._zone." + ksSvc("nosuch", ns), qtype: dns.TypeA, want: nx},
		{name: "zone-a.near._zone." + svc, qtype: dns.TypeA, want: nx},
		{name: "zone-a.pin._zone." + ksSvc("empty", ns), qtype: dns.TypeA, want: nodata},
		{name: "zone-a.prefer._zone." + ksSvc("empty", ns), qtype: dns.TypeA, want: nodata},
		{name: ksSvc("empty", ns), qtype: dns.TypeA, want: nx},
		{name: "_pg._tcp." + ksSvc("empty", ns), qtype: dns.TypeSRV, want: nx},
	})
	checkParity(t, plainOurs, plainStock, []parityCase{
		{name: pinA, qtype: dns.TypeA, want: nx},
	})
}

// limitsCorefile has kubeschema and multicluster on one connection; %s are
// more lines of each stanza.
const limitsCorefile = `.:0 {
    bind 127.0.0.1
    kubeschema cluster.local {
        kubeconfig %[1]s
        startup_timeout 60s
%[2]s    }
    multicluster clusterset.local {
        kubeconfig %[1]s
        startup_timeout 60s
%[3]s    }
}
`

// TestAPIServerLimits: apiserver_qps, apiserver_burst and
// apiserver_max_inflight set in one stanza apply to the connection it
// shares; even at one call at a time and one a second, every watch starts
// (a watch holds its slot until its stream starts, not for its life) and
// answers come. Two stanzas that set a limit differently do not start.
func TestAPIServerLimits(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("limits")
	svc := e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	s := startServer(t, fmt.Sprintf(limitsCorefile, e.kubeconfig,
		"        apiserver_qps 1\n        apiserver_burst 1\n        apiserver_max_inflight 1\n", ""))
	name := ksSvc("web", ns)
	expect(t, s, "udp", name, dns.TypeA, answer(addrLine(name, clusterIPsOf(svc)[0])), settleTimeout)
	expect(t, s, "udp", clustersetZone, dns.TypeSOA, answer(soaLine(clustersetZone, clustersetZone)), settleTimeout)

	err := startError(t, fmt.Sprintf(limitsCorefile, e.kubeconfig, "        apiserver_qps 5\n", "        apiserver_qps 6\n"))
	if want := "multicluster sets apiserver_qps 6, but kubeschema, which shares its connection to the API server, set 5"; !strings.Contains(err.Error(), want) {
		t.Errorf("conflicting limits: %v, want it to say %q", err, want)
	}
}

// leakCorefile is kubeschema (or stock, with %[3]s "kubernetes") with
// fallthrough for the reverse zones, forwarding what is passed on to a
// stand-in for the upstream resolver (%[4]s) that answers every PTR: what
// reaches it has leaked.
const leakCorefile = `.:0 {
    bind 127.0.0.1
    %[3]s cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
%[2]s        fallthrough in-addr.arpa ip6.arpa
    }
    forward . %[4]s
}
`

// startLeakUpstream is a resolver on loopback that answers every query
// with a PTR to leaked.upstream.example.; it returns its address.
func startLeakUpstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		m.Answer = []dns.RR{&dns.PTR{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60},
			Ptr: "leaked.upstream.example."}}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// TestReverseCIDRsParity: with reverse_cidrs, the reverse name of an
// address in the cluster's own ranges (the ServiceCIDR objects with auto,
// and the ranges given) that no object owns is an authoritative NXDOMAIN
// with the reverse zone's SOA, despite fallthrough; stock passes it on
// upstream. Owned addresses keep their PTR, addresses outside the ranges
// are passed on as before, and a ServiceCIDR created later is followed.
func TestReverseCIDRsParity(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("reverse")
	upstream := startLeakUpstream(t)
	ours := startServer(t, fmt.Sprintf(leakCorefile, e.kubeconfig, "        startup_timeout 60s\n        reverse_cidrs auto 10.244.0.0/16\n", "kubeschema", upstream))
	stock := startServer(t, fmt.Sprintf(leakCorefile, e.kubeconfig, "", "kubernetes", upstream))
	web := e.createService(ns, clusterIPService("web", servicePort("http", corev1.ProtocolTCP, 80)))
	webIP := clusterIPsOf(web)[0]

	leaked := func(ip string) wantReply {
		name := ptrName(t, ip)
		w := answer(name + " 60 IN PTR leaked.upstream.example.")
		return w
	}
	notOurs := func(ip string) parityCase {
		return parityCase{name: ptrName(t, ip), qtype: dns.TypePTR, want: leaked(ip)}
	}
	authoritative := func(ip, why string) parityCase {
		zone := reverse4Zone
		if strings.Contains(ip, ":") {
			zone = reverse6Zone
		}
		l := leaked(ip)
		return parityCase{name: ptrName(t, ip), qtype: dns.TypePTR, want: ksNXDOMAIN(zone), stock: &l, why: why}
	}
	const leak = "stock passes the reverse name of an address of the cluster that no object owns upstream (kubernetes/kubernetes#120585)"
	checkParity(t, ours, stock, []parityCase{
		{name: ptrName(t, webIP), qtype: dns.TypePTR, want: answer(rrLine(ptrName(t, webIP), "PTR", ksSvc("web", ns)))},
		authoritative("10.96.255.254", leak+": a free service address (the ServiceCIDR kubernetes)"),
		authoritative("fd00:10:96::fffe", leak+": a free IPv6 service address (the ServiceCIDR kubernetes)"),
		authoritative("10.244.70.5", leak+": a pod address (reverse_cidrs 10.244.0.0/16)"),
		notOurs("192.0.2.1"),
	})
	// A missing reply for a name other than a full address is as before.
	expect(t, ours, "udp", "96.10.in-addr.arpa.", dns.TypePTR, answer("96.10.in-addr.arpa. 60 IN PTR leaked.upstream.example."), settleTimeout)

	extra := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "schemadns-test-extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.97.0.0/24"}}}
	if _, err := e.kube.NetworkingV1().ServiceCIDRs().Create(e.ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.kube.NetworkingV1().ServiceCIDRs().Delete(context.Background(), extra.Name, metav1.DeleteOptions{})
	})
	expect(t, ours, "udp", ptrName(t, "10.97.0.9"), dns.TypePTR, ksNXDOMAIN(reverse4Zone), changeTimeout)
}
