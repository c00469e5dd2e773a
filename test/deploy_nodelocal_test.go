package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The node-local component of deploy/ run as a node would run it, in
// front of the cluster DNS.

// TestDeployNodeLocalAutopath runs the two Corefiles of the node-local
// component with the multicluster component together, as a node would:
// the cluster DNS (kube-dns) and the node-local cache, each on port 53 of
// a loopback address standing for 10.96.0.10 and 169.254.20.10, with the
// node's resolv.conf naming a stub upstream. The example Pod's dnsConfig,
// as a resolv.conf, then resolves short names with glibc: the pod's own
// namespace, another namespace, and a name outside the cluster; and the
// clusterset name of a ServiceImport, which the node-local cache must
// send to the cluster DNS (not to the node's resolvers) for the two
// components to work together. The node-local Corefile is the same with
// any other components (TestDeployComponentsCompose).
func TestDeployNodeLocalAutopath(t *testing.T) {
	c := kubeapi.Shared(t)
	bin := coreDNSBinary(t)
	r := renderCombo(t, combo{"multicluster", "node-local"})
	_, pod := examplePod(t)
	if pod.Spec.DNSPolicy != corev1.DNSNone || pod.Spec.DNSConfig == nil || len(pod.Spec.DNSConfig.Nameservers) == 0 {
		t.Fatalf("the example Pod is not set up for autopath: %+v", pod.Spec.DNSConfig)
	}
	wantSearch := "search." + pod.Namespace + ".cluster.local.ap.k8s.io"
	if s := pod.Spec.DNSConfig.Searches; len(s) != 1 || s[0] != wantSearch {
		t.Fatalf("the example Pod's search path is %q, want [%s]", s, wantSearch)
	}
	const nodeLocalIP, clusterDNSIP = "169.254.20.10", "10.96.0.10"
	if pod.Spec.DNSConfig.Nameservers[0] != nodeLocalIP {
		t.Fatalf("the example Pod's nameserver is %s, want the node-local cache %s", pod.Spec.DNSConfig.Nameservers[0], nodeLocalIP)
	}
	if svc := typed[corev1.Service](t, r.find(t, "Service", "kube-dns")); svc.Spec.ClusterIP != clusterDNSIP {
		t.Fatalf("kube-dns has cluster IP %s, the node-local Corefile forwards to %s", svc.Spec.ClusterIP, clusterDNSIP)
	}

	// The services the pod looks up, in its namespace and another, and an
	// import of the cluster set.
	other := newKubeEnv(t).namespace("deploy-nl")
	web := createClusterIPService(t, pod.Namespace, "deploy-web")
	db := createClusterIPService(t, other, "db")
	mc := newMcEnv(t)
	imports := mc.namespace("deploy-nl")
	mc.createImport(imports, mcClusterSetIP("shared", []string{"10.247.51.10"}, mcPort("http", corev1.ProtocolTCP, 80)))

	node, cluster := freeLoopback53(t), freeLoopback53(t)
	for cluster == node {
		cluster = freeLoopback53(t)
	}
	upstream := startStubUpstream(t)
	// The node's resolv.conf: its resolver, and a search domain of the
	// host's own, which gensearchpath appends after the cluster's.
	nodeResolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(nodeResolv, []byte("nameserver 127.0.0.1\nsearch corp.example.net\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	clusterFiles := r.configOf(t, "Deployment", "coredns")
	clusterFiles = editConfig(t, clusterFiles, append([]edit{
		{".:53 {\n", ".:53 {\n    bind " + cluster + "\n"},
		{"    health {\n", "    health 127.0.0.1:0 {\n"},
		{"    ready\n", "    ready 127.0.0.1:0\n"},
		{"    prometheus :9153\n", "    prometheus 127.0.0.1:0\n"},
		{"    forward . /etc/resolv.conf {\n", "    forward . " + upstream.addr + " {\n"},
	}, kubeconfigEdits(clusterFiles, c.Kubeconfig)...))
	runConfig(t, bin, clusterFiles, &coreDNSProcess{})

	nodeFiles := r.configOf(t, "DaemonSet", "node-local-dns")
	if len(nodeFiles) != 1 {
		t.Fatalf("the node-local cache mounts %d files, want its Corefile alone:\n%s", len(nodeFiles), nodeFiles)
	}
	nodeCF := nodeLocalOnLoopback(t, nodeFiles["Corefile"], nodeLocalAddrs{
		node: node, cluster: cluster, resolvers: upstream.addr, resolvConf: nodeResolv, metrics: "127.0.0.1:0"})
	nodeProc := &coreDNSProcess{}
	runCorefile(t, bin, nodeCF, nodeProc)

	// Both servers answer and the cluster DNS has synced.
	eventually(t, 30*time.Second, "the cluster DNS serves db."+other, func() bool {
		r, err := apExchange(cluster+":53", "db."+other+".svc.cluster.local.", dns.TypeA)
		return err == nil && len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == db
	})
	eventually(t, 30*time.Second, "the node-local cache answers", func() bool {
		_, err := apExchange(node+":53", "example.invalid.", dns.TypeA)
		return err == nil
	})

	// The pod's resolv.conf, as the kubelet writes it from dnsConfig, with
	// the test's addresses for the node-local cache and the cluster DNS.
	var resolv strings.Builder
	for _, ns := range pod.Spec.DNSConfig.Nameservers {
		switch ns {
		case nodeLocalIP:
			ns = node
		case clusterDNSIP:
			ns = cluster
		default:
			t.Fatalf("the example Pod's nameserver %s is neither the node-local cache nor the cluster DNS", ns)
		}
		fmt.Fprintf(&resolv, "nameserver %s\n", ns)
	}
	fmt.Fprintf(&resolv, "search %s\noptions ndots:%s timeout:10 attempts:1\n",
		strings.Join(pod.Spec.DNSConfig.Searches, " "), *pod.Spec.DNSConfig.Options[0].Value)
	for _, tc := range []struct{ name, canonical, addr string }{
		{"deploy-web", "deploy-web." + pod.Namespace + ".svc.cluster.local", web},
		{"kubernetes", "kubernetes.default.svc.cluster.local", "10.96.0.1"},
		{"db." + other, "db." + other + ".svc.cluster.local", db},
		{apExternal, apExternal, apExternal4},
		{"shared." + imports + ".svc.clusterset.local", "shared." + imports + ".svc.clusterset.local", "10.247.51.10"},
	} {
		got := glibcLookup(t, resolv.String(), tc.name)
		if !got.found || !slices.Contains(got.addrs, tc.addr) || !strings.EqualFold(strings.TrimSuffix(got.canonical, "."), tc.canonical) {
			t.Errorf("%s from the example Pod: %+v, want %s (%s)\nnode-local log:\n%s", tc.name, got, tc.addr, tc.canonical, nodeProc.log())
		}
	}
	if got := glibcLookup(t, resolv.String(), "nosuchname"); got.found {
		t.Errorf("nosuchname from the example Pod: %+v, want not found", got)
	}
}

// nodeLocalAddrs are the test's addresses for the node-local Corefile.
type nodeLocalAddrs struct {
	node, cluster string // loopback addresses standing for 169.254.20.10 and 10.96.0.10, port 53 both
	resolvers     string // the node's resolvers, those of its /etc/resolv.conf (IP[:PORT])
	resolvConf    string // a resolv.conf with the node's search domains
	metrics       string // where prometheus listens
}

// nodeLocalOnLoopback moves the node-local Corefile of deploy/ to the
// test's addresses; each edit must apply, so a change to the Corefile
// that the tests no longer understand fails them.
func nodeLocalOnLoopback(t *testing.T, corefile string, a nodeLocalAddrs) string {
	t.Helper()
	const nodeLocalIP, clusterDNSIP = "169.254.20.10", "10.96.0.10"
	dir := t.TempDir()
	for _, e := range []edit{
		{"forward . /etc/resolv.conf\n", "forward . " + a.resolvers + "\n"},
		{"search /etc/resolv.conf\n", "search " + a.resolvConf + "\n"},
		{"prometheus :9253", "prometheus " + a.metrics},
		{nodeLocalIP + ":8080", "127.0.0.1:0"},
		{nodeLocalIP + ":8181", "127.0.0.1:0"},
		{nodeLocalIP, a.node},
		{clusterDNSIP, a.cluster},
		// handover's key and readiness socket: the pod's hostPath and
		// emptyDir, here the test's own directory.
		{"/run/node-local-dns/handover.key", filepath.Join(dir, "handover.key")},
		{"/run/coredns/ready.sock", filepath.Join(dir, "ready.sock")},
	} {
		if !strings.Contains(corefile, e.old) {
			t.Fatalf("the node-local Corefile has no %q:\n%s", e.old, corefile)
		}
		corefile = strings.ReplaceAll(corefile, e.old, e.new)
	}
	return corefile
}

// createClusterIPService creates a ClusterIP service, deleted when the
// test ends, and returns its cluster IP.
func createClusterIPService(t *testing.T, ns, name string) string {
	t.Helper()
	kube := kubeapi.Shared(t).Client()
	svc, err := kube.CoreV1().Services(ns).Create(t.Context(), clusterIPService(name, servicePort("http", corev1.ProtocolTCP, 80)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return svc.Spec.ClusterIP
}
