package kubeschema

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// externalPlugin is the test plugin with two services that have external
// IPs in ns1: lb (load balancer, both families, the fixture's three ports)
// and bare (spec.externalIPs, no ports).
func externalPlugin(t *testing.T, mutate func(*options)) *Kubeschema {
	k := newTestPlugin(t, mutate)
	src := k.data.(*memSource)
	src.Add(t,
		service("ns1", "lb", func(s *corev1.Service) {
			clusterIP("10.96.0.30")(s)
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}, {IP: "2001:db8::1"}, {Hostname: "lb.example.net"}}
		}),
		service("ns1", "bare", func(s *corev1.Service) {
			headless()(s)
			s.Spec.ExternalIPs = []string{"192.0.2.9"}
		}),
	)
	k.Publish(newBuilder(k, src).fullBuild())
	return k
}

// externalAsked is what External returns for name and qtype in
// example.org, one "host port name" line per service, and the rcode.
func externalAsked(k *Kubeschema, name string, qtype uint16, headless bool) (string, int) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	svcs, rcode := k.External(request.Request{Req: m, Zone: "example.org."}, headless)
	return renderServices(svcs), rcode
}

func renderServices(svcs []msg.Service) string {
	lines := make([]string, 0, len(svcs))
	for _, s := range svcs {
		lines = append(lines, fmt.Sprintf("%s %d %s", s.Host, s.Port, msg.Domain(s.Key)))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestExternal(t *testing.T) {
	k := externalPlugin(t, nil)
	const lb, db = "lb.ns1.example.org.", "db.ns1.example.org."
	for _, tc := range []struct {
		name     string
		qtype    uint16
		headless bool
		want     string
		rcode    int
	}{
		// Every external IP (not the ingress host name) by every port.
		{lb, dns.TypeA, false, "192.0.2.1 53 " + lb + "\n192.0.2.1 80 " + lb + "\n192.0.2.1 8080 " + lb +
			"\n2001:db8::1 53 " + lb + "\n2001:db8::1 80 " + lb + "\n2001:db8::1 8080 " + lb, dns.RcodeSuccess},
		{"_http._tcp." + lb, dns.TypeSRV, false, "192.0.2.1 80 " + lb + "\n2001:db8::1 80 " + lb, dns.RcodeSuccess},
		{"_http._udp." + lb, dns.TypeSRV, false, "", dns.RcodeNameError},
		// No ports: the "no port" entry.
		{"bare.ns1.example.org.", dns.TypeA, true, "192.0.2.9 -1 bare.ns1.example.org.", dns.RcodeSuccess},
		// Only an endpoint of headless can be asked by name.
		{"x." + lb, dns.TypeA, false, "", dns.RcodeNameError},
		{"web.ns1.example.org.", dns.TypeA, true, "", dns.RcodeNameError},
		{"missing.ns1.example.org.", dns.TypeA, false, "", dns.RcodeNameError},
		{"lb.nope.example.org.", dns.TypeA, false, "", dns.RcodeNameError},
		{"a.b.c.d.ns1.example.org.", dns.TypeA, false, "", dns.RcodeNameError},
		{"ns1.example.org.", dns.TypeA, false, "", dns.RcodeSuccess},
		{lb, dns.TypePTR, false, "", dns.RcodeSuccess},
		// headless: ready, not terminating endpoints on the slice's port,
		// named by hostname or dashed address.
		{db, dns.TypeA, false, "", dns.RcodeNameError},
		{db, dns.TypeA, true, "10.1.0.1 8080 db-0." + db + "\n10.1.0.2 8080 10-1-0-2." + db + "\nfd00::1 8080 db-0." + db, dns.RcodeSuccess},
		{"db-0." + db, dns.TypeA, true, "10.1.0.1 8080 db-0." + db + "\nfd00::1 8080 db-0." + db, dns.RcodeSuccess},
		{"_pg._tcp." + db, dns.TypeSRV, true, "", dns.RcodeNameError}, // the slice's port is http
	} {
		got, rcode := externalAsked(k, tc.name, tc.qtype, tc.headless)
		if got != tc.want || rcode != tc.rcode {
			t.Errorf("%s %s headless=%v: rcode %s\n%s\nwant rcode %s\n%s", tc.name, dns.TypeToString[tc.qtype], tc.headless,
				dns.RcodeToString[rcode], got, dns.RcodeToString[tc.rcode], tc.want)
		}
	}
}

// TestExternalNamespaces: the namespaces option hides a namespace and its
// services, as in the cluster zone.
func TestExternalNamespaces(t *testing.T) {
	k := externalPlugin(t, func(o *options) { o.namespaces = map[string]bool{"default": true} })
	for _, name := range []string{"lb.ns1.example.org.", "ns1.example.org."} {
		if got, rcode := externalAsked(k, name, dns.TypeA, true); rcode != dns.RcodeNameError || got != "" {
			t.Errorf("%s: rcode %s %q, want NXDOMAIN", name, dns.RcodeToString[rcode], got)
		}
	}
}

func TestExternalBeforeSync(t *testing.T) {
	if _, rcode := externalAsked(newKubeschema(), "lb.ns1.example.org.", dns.TypeA, false); rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s before the first snapshot, want SERVFAIL", dns.RcodeToString[rcode])
	}
}

func TestExternalServices(t *testing.T) {
	k := externalPlugin(t, nil)
	svcs, eps := k.ExternalServices("example.org.", true)
	names := map[string]bool{}
	for _, s := range svcs {
		names[msg.Domain(s.Key)] = true
	}
	for key, list := range eps {
		names[msg.Domain(key[:strings.LastIndexByte(key, '/')])] = true
		for _, s := range list {
			names[msg.Domain(s.Key)] = true
		}
	}
	var got []string
	for n := range names {
		got = append(got, n)
	}
	slices.Sort(got)
	want := []string{"10-1-0-2.db.ns1.example.org.", "10-1-1-1.notready.ns1.example.org.", "_dns._udp.lb.ns1.example.org.",
		"_http._tcp.db.ns1.example.org.", "_http._tcp.lb.ns1.example.org.", "_http._tcp.notready.ns1.example.org.",
		"bare.ns1.example.org.", "db-0.db.ns1.example.org.", "db.ns1.example.org.", "lb.ns1.example.org.", "notready.ns1.example.org."}
	if !slices.Equal(got, want) {
		t.Errorf("names:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if k.ExternalSerial("example.org.") == 0 {
		t.Error("serial 0 with a snapshot")
	}
	if rrs := k.ExternalAddress(request.Request{Zone: "example.org."}, false); len(rrs) != 1 || rrs[0].(*dns.A).A.String() != "127.0.0.1" {
		t.Errorf("name server addresses %v, want 127.0.0.1", rrs)
	}
}
