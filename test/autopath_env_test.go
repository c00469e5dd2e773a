package test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The autopath set-up of KEP-2009, whole: a node-local CoreDNS (cache,
// gensearchpath, forward to an external resolver) in front of a cluster
// CoreDNS (edns0autopath, kubeschema against the real API server, forward
// to the same external resolver), and the external resolver itself, a stub
// on loopback that knows www.example.com.
//
// The real glibc resolver cannot be told a port, so both CoreDNS servers
// listen on port 53, each on an address of its own in 127.0.0.0/8 picked at
// random (several test binaries may run at once, and CoreDNS listens with
// SO_REUSEPORT, so a shared address would split the queries between them).

// The names of the set-up.
const (
	apSuffix     = "ap.k8s.io"
	apCluster    = "cluster.local"
	apOtherNS    = "otherns"
	apNamespace  = "default" // the pod's namespace
	apShortSvc   = "web"     // a service in apNamespace
	apOtherSvc   = "db"      // a service in apOtherNS
	apExternal   = "www.example.com"
	apExternal4  = "203.0.113.10"
	apExternal6  = "2001:db8::10"
	apMissing    = "nosuchname"
	apHostSearch = "corp.example.net example.net" // the host's search domains
)

// apEnv is one running set-up.
type apEnv struct {
	t          testing.TB
	kube       kubernetes.Interface
	kubeconfig string
	// node and cluster are the loopback addresses (port 53) of the
	// node-local and the cluster CoreDNS.
	node, cluster string
	external      *stubUpstream
	// webIP and dbIP are the services' cluster IPs.
	webIP, dbIP string
}

// apOptions shape a set-up.
type apOptions struct {
	// clusterCache puts `cache` in the cluster DNS too, as in a real
	// cluster; the tests leave it out so that nothing hides a query.
	clusterCache bool
}

// newApEnv starts everything and waits until the cluster DNS serves both
// services.
func newApEnv(tb testing.TB, opts apOptions) *apEnv {
	tb.Helper()
	c := kubeapi.Shared(tb)
	e := &apEnv{t: tb, kube: c.Client(), kubeconfig: c.Kubeconfig}
	e.node, e.cluster = freeLoopback53(tb), freeLoopback53(tb)
	for e.cluster == e.node {
		e.cluster = freeLoopback53(tb)
	}
	e.external = startStubUpstream(tb)
	e.webIP = e.service(apNamespace, apShortSvc)
	e.dbIP = e.service(apOtherNS, apOtherSvc)

	cache := ""
	if opts.clusterCache {
		cache = "    cache 30\n"
	}
	startServer(tb, fmt.Sprintf(apClusterCorefile, e.cluster, e.kubeconfig, e.external.addr, cache))
	startServer(tb, fmt.Sprintf(apNodeCorefile, e.node, e.cluster, e.external.addr, apHostSearch))

	for name, ip := range map[string]string{
		apShortSvc + "." + apNamespace + ".svc." + apCluster + ".": e.webIP,
		apOtherSvc + "." + apOtherNS + ".svc." + apCluster + ".":   e.dbIP,
	} {
		eventually(tb, settleTimeout, name+" in the cluster DNS", func() bool {
			r, err := apExchange(e.cluster+":53", name, dns.TypeA)
			return err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == ip
		})
	}
	return e
}

// The cluster DNS: bind address, kubeconfig, external resolver, and an
// optional cache line. The plugins run in plugin.cfg's order whatever
// their order here.
const apClusterCorefile = `.:53 {
    bind %[1]s
    prometheus 127.0.0.1:0
    edns0autopath {
        suffix ap.k8s.io
        cluster_suffix cluster.local
    }
%[4]s    kubeschema cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[2]s
        startup_timeout 60s
    }
    forward . %[3]s
}
`

// The node-local cache, as in the KEP: the autopath zone expanded by
// gensearchpath, the cluster zone forwarded to the cluster DNS, everything
// else to the external resolver. Bind address, cluster DNS, external
// resolver, host search domains.
const apNodeCorefile = `ap.k8s.io:53 {
    bind %[1]s
    prometheus 127.0.0.1:0
    cache 30
    gensearchpath ap.k8s.io cluster.local v1 {
        forward %[2]s:53
        search %[4]s
        fallthrough
    }
    forward . %[3]s
}
cluster.local:53 {
    bind %[1]s
    prometheus 127.0.0.1:0
    cache 30
    forward . %[2]s:53
}
.:53 {
    bind %[1]s
    prometheus 127.0.0.1:0
    cache 30
    forward . %[3]s
}
`

// service creates (or reuses) a ClusterIP service and returns its IP; it
// is deleted when the test ends. The namespace is created when missing
// and kept: without controllers a namespace never finishes deleting, and
// a terminating one takes no new objects.
func (e *apEnv) service(ns, name string) string {
	e.t.Helper()
	ctx := context.Background()
	_, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create namespace %s: %v", ns, err)
	}
	svc, err := e.kube.CoreV1().Services(ns).Create(ctx, clusterIPService(name, servicePort("http", corev1.ProtocolTCP, 80)), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		svc, err = e.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		e.t.Fatalf("create service %s/%s: %v", ns, name, err)
	}
	e.t.Cleanup(func() {
		if err := e.kube.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Logf("delete service %s/%s: %v", ns, name, err)
		}
	})
	return svc.Spec.ClusterIP
}

// freeLoopback53 picks a random address in 127.0.0.0/8 whose port 53 is
// free for UDP and TCP (probed without SO_REUSEPORT, so that a listener
// that has it is found too).
func freeLoopback53(tb testing.TB) string {
	tb.Helper()
	for range 50 {
		ip := fmt.Sprintf("127.%d.%d.%d", 10+rand.IntN(240), rand.IntN(256), 2+rand.IntN(250))
		addr := net.JoinHostPort(ip, "53")
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			continue
		}
		l, err := net.Listen("tcp", addr)
		pc.Close()
		if err != nil {
			continue
		}
		l.Close()
		return ip
	}
	tb.Fatal("no free port 53 on loopback after 50 tries")
	return ""
}

// apExchange sends one query over UDP.
func apExchange(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(m, addr)
	return r, err
}

// apRequests is what a CoreDNS server counted in coredns_dns_requests_total
// (queries from its clients, not the sub-queries of its plugins), by
// query type, for the server block zone given ("" for all).
func apRequests(tb testing.TB, ip, zone string) map[string]int {
	tb.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	server := "dns://" + net.JoinHostPort(ip, "53")
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "coredns_dns_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["server"] == server && (zone == "" || l["zone"] == zone) {
				out[l["type"]] += int(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

// apTotal adds up counts by type.
func apTotal(byType map[string]int) int {
	n := 0
	for _, v := range byType {
		n += v
	}
	return n
}

// stubUpstream is the external resolver: a real DNS server on loopback
// (UDP and TCP on one port) that answers www.example.com and says NXDOMAIN
// to everything else, and counts the queries it gets.
type stubUpstream struct {
	addr string
	mu   sync.Mutex
	n    int
}

func startStubUpstream(tb testing.TB) *stubUpstream {
	tb.Helper()
	s := &stubUpstream{}
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			continue
		}
		s.addr = pc.LocalAddr().String()
		for _, srv := range []*dns.Server{{PacketConn: pc, Handler: s}, {Listener: l, Handler: s}} {
			go srv.ActivateAndServe()
			tb.Cleanup(func() { srv.Shutdown() })
		}
		return s
	}
	tb.Fatal("no port free for both UDP and TCP")
	return nil
}

func (s *stubUpstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	q := r.Question[0]
	switch strings.ToLower(q.Name) {
	case apExternal + ".":
		switch q.Qtype {
		case dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(apExternal4)})
		case dns.TypeAAAA:
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 60}, AAAA: net.ParseIP(apExternal6)})
		}
	case ".":
	default:
		m.Rcode = dns.RcodeNameError
	}
	if len(m.Answer) == 0 {
		soa, _ := dns.NewRR(". 60 IN SOA a.root-servers.invalid. hostmaster.invalid. 1 1800 900 604800 60")
		m.Ns = []dns.RR{soa}
	}
	w.WriteMsg(m)
}

// count is how many queries the stub has answered.
func (s *stubUpstream) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// glibcResult is what getent ahosts printed.
type glibcResult struct {
	found     bool
	canonical string   // the name on the first line
	addrs     []string // each address once, in order
}

// glibcLookup resolves name with the system's own resolver, glibc's
// getaddrinfo through `getent ahosts`, unmodified, in a private mount
// namespace whose /etc/resolv.conf is resolvConf.
func glibcLookup(tb testing.TB, resolvConf, name string) glibcResult {
	tb.Helper()
	for _, bin := range []string{"unshare", "mount", "getent"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("%s is not installed (util-linux, mount and libc-bin; hack/deps.sh): %v", bin, err)
		}
	}
	file := filepath.Join(tb.TempDir(), "resolv.conf")
	if err := os.WriteFile(file, []byte(resolvConf), 0o644); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$0" /etc/resolv.conf && exec getent ahosts "$1"`, file, name)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 2 && len(out) == 0: // getent: not found
		return glibcResult{}
	default:
		tb.Fatalf("getent ahosts %s in a mount namespace (needs CAP_SYS_ADMIN: run as root): %v\n%s", name, err, out)
	}
	res := glibcResult{found: true}
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if i == 0 && len(f) >= 3 {
			res.canonical = f[2]
		}
		if !slices.Contains(res.addrs, f[0]) {
			res.addrs = append(res.addrs, f[0])
		}
	}
	return res
}

// apResolvConf is a resolv.conf for a pod: its nameserver, search domains
// and extra options after ndots:5.
// The timeout is long on purpose: when one of glibc's parallel A/AAAA
// replies is late, glibc resends in single-request mode, and the counts
// would then measure the machine's load rather than the search path.
func apResolvConf(nameserver, search string, options ...string) string {
	return fmt.Sprintf("nameserver %s\nsearch %s\noptions ndots:5 timeout:10 attempts:1 %s\n", nameserver, search, strings.Join(options, " "))
}
