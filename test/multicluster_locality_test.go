package test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	golog "log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// Whole-server tests of multicluster against MCS installs other than the
// shared cluster's (whose ServiceImport CRD serves v1alpha1 and v1beta1):
// a CRD that serves only v1beta1, one that serves only v1alpha1, each in
// an API server of its own; the local cluster's ID from the cluster_id
// option and from the id.k8s.io ClusterProperty; trafficDistribution
// PreferClose; ipFamilies. Addresses: endpoints 10.246.40.x, clusterset
// IPs 10.247.40.x and fd00:10:247:40::x.

// ownEnv is a test's access to an API server of its own.
type ownEnv struct {
	*kubeEnv
	mcs     mcsclient.Interface
	cluster *kubeapi.Cluster
}

// ownCluster starts an API server of the test's own with opts, stopped
// when the test ends; skipped with -short, as the shared one is.
func ownCluster(t *testing.T, opts kubeapi.Options) *ownEnv {
	t.Helper()
	kubeapi.Shared(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := kubeapi.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start an API server of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Log(err)
		}
	})
	mcs, err := mcsclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatalf("MCS client: %v", err)
	}
	return &ownEnv{kubeEnv: &kubeEnv{t: t, ctx: t.Context(), kube: c.Client(), kubeconfig: c.Kubeconfig}, mcs: mcs, cluster: c}
}

// localityCorefile is multicluster alone, with the options in %[2]s.
const localityCorefile = `.:0 {
    bind 127.0.0.1
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %[1]s
        startup_timeout 60s
%[2]s
    }
}
`

func localityServer(t *testing.T, e *ownEnv, options string) *server {
	t.Helper()
	return startServer(t, fmt.Sprintf(localityCorefile, e.kubeconfig, options))
}

// logCapture collects the process's log (CoreDNS's plugins write to the
// standard logger) while a test runs; the lines still reach stderr.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func captureLog(t *testing.T) *logCapture {
	lc := &logCapture{}
	golog.SetOutput(io.MultiWriter(os.Stderr, lc))
	t.Cleanup(func() { golog.SetOutput(os.Stderr) })
	return lc
}

func (lc *logCapture) Write(p []byte) (int, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.buf.Write(p)
}

// count is the number of lines holding s.
func (lc *logCapture) count(s string) int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return strings.Count(lc.buf.String(), s)
}

// setClusterID creates, updates or (with "") deletes the id.k8s.io
// ClusterProperty.
func setClusterID(t *testing.T, c *kubeapi.Cluster, id string) {
	t.Helper()
	api := c.Dynamic().Resource(kubeapi.ClusterProperties)
	if id == "" {
		if err := api.Delete(t.Context(), "id.k8s.io", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete the id.k8s.io ClusterProperty: %v", err)
		}
		return
	}
	prop := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
		"metadata": map[string]any{"name": "id.k8s.io"},
		"spec":     map[string]any{"value": id},
	}}
	old, err := api.Get(t.Context(), "id.k8s.io", metav1.GetOptions{})
	if err == nil {
		prop.SetResourceVersion(old.GetResourceVersion())
		_, err = api.Update(t.Context(), prop, metav1.UpdateOptions{})
	} else {
		_, err = api.Create(t.Context(), prop, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("set the id.k8s.io ClusterProperty to %q: %v", id, err)
	}
}

// pgPorts are the slices' ports: one named TCP port.
var pgPorts = []discoveryv1.EndpointPort{slicePort("pg", corev1.ProtocolTCP, 5432)}

// hosts are the endpoints an answer of "db" holds: host name (with its
// cluster) to addresses.
type hosts map[string][]string

// localityWant are the answers of the PreferClose import "db" of ns: A,
// AAAA and SRV with the endpoints of h.
func localityWant(ns string, h hosts) (a, aaaa, srv wantReply) {
	svc := mcSvc("db", ns)
	var srvs []string
	targets := map[string][]string{}
	for host, ips := range h {
		for _, ip := range ips {
			if addrType(ip) == dns.TypeA {
				a.answer = append(a.answer, addrLine(svc, ip))
			} else {
				aaaa.answer = append(aaaa.answer, addrLine(svc, ip))
			}
		}
		srvs = append(srvs, rrLine("_pg._tcp."+svc, "SRV", fmt.Sprintf("0 %d 5432 %s.%s", 100/len(h), host, svc)))
		targets[host+"."+svc] = ips
	}
	if aaaa.answer == nil {
		aaaa = mcNODATA(clustersetZone)
	}
	return a, aaaa, mcSRVWant(srvs, targets)
}

// expectDB polls the A, AAAA and SRV answers of "db" (see localityWant).
func expectDB(t *testing.T, s *server, ns string, h hosts) {
	t.Helper()
	a, aaaa, srv := localityWant(ns, h)
	expect(t, s, "udp", mcSvc("db", ns), dns.TypeA, a, changeTimeout)
	expect(t, s, "udp", mcSvc("db", ns), dns.TypeAAAA, aaaa, changeTimeout)
	expect(t, s, "tcp", "_pg._tcp."+mcSvc("db", ns), dns.TypeSRV, srv, changeTimeout)
}

// TestMulticlusterV1beta1Only runs against a ServiceImport CRD that
// serves only v1beta1, with the ClusterProperty CRD: the log says v1beta1
// is read; ipFamilies limit a dual-stack import to IPv4; the local
// cluster's ID comes from the id.k8s.io ClusterProperty and follows its
// changes; a PreferClose headless import answers its name and SRV records
// with the local cluster's endpoints, every cluster's when the local one
// has none ready or its ID is unknown; host names and PTR records are
// never filtered.
func TestMulticlusterV1beta1Only(t *testing.T) {
	logs := captureLog(t)
	e := ownCluster(t, kubeapi.Options{ServiceImportVersions: []string{"v1beta1"}, ClusterProperties: true})
	ns := e.namespace("mc-beta")
	api := e.mcs.MulticlusterV1beta1().ServiceImports(ns)
	web := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mcsv1beta1.ServiceImportSpec{
		Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.247.40.10", "fd00:10:247:40::10"}, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
		Ports: []mcsv1beta1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	db := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: mcsv1beta1.ServiceImportSpec{
		Type: mcsv1beta1.Headless, TrafficDistribution: new("PreferClose"),
		Ports: []mcsv1beta1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}}}
	for _, imp := range []*mcsv1beta1.ServiceImport{web, db} {
		if _, err := api.Create(e.ctx, imp, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create v1beta1 serviceimport %s: %v", imp.Name, err)
		}
	}
	e.createSlice(ns, mcSlice("db-a", "db", "cluster-a", pgPorts,
		endpoint{addr: "10.246.40.1", hostname: "a0"}, endpoint{addr: "10.246.40.2", hostname: "a1"}))
	e.createSlice(ns, mcSlice("db-b", "db", "cluster-b", pgPorts, endpoint{addr: "10.246.40.11", hostname: "b0"}))
	setClusterID(t, e.cluster, "cluster-a")
	s := localityServer(t, e, "")

	webName, svc := mcSvc("web", ns), mcSvc("db", ns)
	local := hosts{"a0.cluster-a": {"10.246.40.1"}, "a1.cluster-a": {"10.246.40.2"}}
	expectDB(t, s, ns, local)
	checkAll(t, s, "udp", []dnsCase{
		{webName, dns.TypeA, answer(rrLine(webName, "A", "10.247.40.10"))},
		{webName, dns.TypeAAAA, mcNODATA(clustersetZone)},
		{ptrName(t, "fd00:10:247:40::10"), dns.TypePTR, mcNXDOMAIN(reverse6Zone)},
		// Never filtered: host names and PTR records of other clusters.
		{"b0.cluster-b." + svc, dns.TypeA, answer(addrLine("b0.cluster-b."+svc, "10.246.40.11"))},
		mcPTR(t, "10.246.40.11", "b0.cluster-b."+svc),
		{"cluster-a." + svc, dns.TypeA, mcNXDOMAIN(clustersetZone)},
	})
	if logs.count("serviceimports: reading multicluster.x-k8s.io/v1beta1") == 0 {
		t.Error("the log does not say that v1beta1 is read")
	}

	// The property changes: cluster-b is local now.
	setClusterID(t, e.cluster, "cluster-b")
	expectDB(t, s, ns, hosts{"b0.cluster-b": {"10.246.40.11"}})
	// No ready endpoint in the local cluster: every cluster's.
	e.replaceEndpoints(ns, "db-b", endpoint{addr: "10.246.40.11", hostname: "b0", unready: true})
	expectDB(t, s, ns, local)
	e.replaceEndpoints(ns, "db-b", endpoint{addr: "10.246.40.11", hostname: "b0"})
	expectDB(t, s, ns, hosts{"b0.cluster-b": {"10.246.40.11"}})
	// The property is gone: no local cluster, every cluster's.
	setClusterID(t, e.cluster, "")
	expectDB(t, s, ns, hosts{"a0.cluster-a": {"10.246.40.1"}, "a1.cluster-a": {"10.246.40.2"}, "b0.cluster-b": {"10.246.40.11"}})
}

// TestMulticlusterV1alpha1Only runs against a ServiceImport CRD that
// serves only v1alpha1, without the ClusterProperty API: the log says
// v1alpha1 is read; ipFamilies limit an import to IPv6; with cluster_id a
// PreferClose import with dual-stack endpoints prefers that cluster's
// (A, AAAA and SRV; all clusters' once it has none ready); without it, and
// no ClusterProperty, the field is ignored and one log line says so.
func TestMulticlusterV1alpha1Only(t *testing.T) {
	logs := captureLog(t)
	e := ownCluster(t, kubeapi.Options{ServiceImportVersions: []string{"v1alpha1"}})
	ns := e.namespace("mc-alpha")
	api := e.mcs.MulticlusterV1alpha1().ServiceImports(ns)
	web := mcClusterSetIP("web", []string{"10.247.40.20", "fd00:10:247:40::20"}, mcPort("http", corev1.ProtocolTCP, 80))
	web.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	db := mcHeadless("db", mcPort("pg", corev1.ProtocolTCP, 5432))
	db.Spec.TrafficDistribution = new("PreferClose")
	for _, imp := range []*mcsv1alpha1.ServiceImport{web, db} {
		if _, err := api.Create(e.ctx, imp, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create v1alpha1 serviceimport %s: %v", imp.Name, err)
		}
	}
	e.createSlice(ns, mcSlice("db-a", "db", "clustera", pgPorts, endpoint{addr: "10.246.40.21", hostname: "a0"}))
	e.createSlice(ns, mcSlice("db-a-v6", "db", "clustera", pgPorts, endpoint{addr: "fd00:10:246:40::21", hostname: "a0"}))
	e.createSlice(ns, mcSlice("db-b", "db", "clusterb", pgPorts,
		endpoint{addr: "10.246.40.31", hostname: "b0"}, endpoint{addr: "10.246.40.32", hostname: "b1"}))
	e.createSlice(ns, mcSlice("db-b-v6", "db", "clusterb", pgPorts, endpoint{addr: "fd00:10:246:40::31", hostname: "b0"}))
	withID := localityServer(t, e, "        cluster_id clustera\n        fallthrough in-addr.arpa ip6.arpa")
	withoutID := localityServer(t, e, "")

	webName, svc := mcSvc("web", ns), mcSvc("db", ns)
	a0 := []string{"10.246.40.21", "fd00:10:246:40::21"}
	remote := hosts{"b0.clusterb": {"10.246.40.31", "fd00:10:246:40::31"}, "b1.clusterb": {"10.246.40.32"}}
	expectDB(t, withID, ns, hosts{"a0.clustera": a0})
	expectDB(t, withoutID, ns, hosts{"a0.clustera": a0, "b0.clusterb": remote["b0.clusterb"], "b1.clusterb": remote["b1.clusterb"]})
	checkAll(t, withID, "udp", []dnsCase{
		{webName, dns.TypeAAAA, answer(rrLine(webName, "AAAA", "fd00:10:247:40::20"))},
		{webName, dns.TypeA, mcNODATA(clustersetZone)},
		{"b1.clusterb." + svc, dns.TypeA, answer(addrLine("b1.clusterb."+svc, "10.246.40.32"))},
		mcPTR(t, "10.246.40.31", "b0.clusterb."+svc),
	})
	if logs.count("serviceimports: reading multicluster.x-k8s.io/v1alpha1") == 0 {
		t.Error("the log does not say that v1alpha1 is read")
	}

	// The local cluster's one endpoint stops being ready: every cluster's.
	e.replaceEndpoints(ns, "db-a", endpoint{addr: "10.246.40.21", hostname: "a0", unready: true})
	e.replaceEndpoints(ns, "db-a-v6", endpoint{addr: "fd00:10:246:40::21", hostname: "a0", unready: true})
	expectDB(t, withID, ns, remote)
	// A second PreferClose import, and changes: still one line.
	db2 := mcHeadless("db2", mcPort("pg", corev1.ProtocolTCP, 5432))
	db2.Spec.TrafficDistribution = new("PreferClose")
	if _, err := api.Create(e.ctx, db2, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create serviceimport db2: %v", err)
	}
	e.createSlice(ns, mcSlice("db2-a", "db2", "clustera", pgPorts, endpoint{addr: "10.246.40.41", hostname: "x"}))
	expect(t, withoutID, "udp", mcSvc("db2", ns), dns.TypeA, answer(addrLine(mcSvc("db2", ns), "10.246.40.41")), settleTimeout)
	expectDB(t, withoutID, ns, remote)
	if n := logs.count("trafficDistribution PreferClose, but the local cluster ID is unknown"); n != 1 {
		t.Errorf("%d log lines say PreferClose is ignored, want 1 (the server with cluster_id logs none)", n)
	}
}

// crds is where CustomResourceDefinitions are served.
var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// serveOnlyV1beta1 upgrades the ServiceImport CRD of c as an MCS install
// would: v1beta1 served and stored, v1alpha1 no longer served (kept in
// the list, as objects stored in it remain).
func serveOnlyV1beta1(t *testing.T, c *kubeapi.Cluster) {
	t.Helper()
	api := c.Dynamic().Resource(crds)
	old, err := api.Get(t.Context(), "serviceimports.multicluster.x-k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(mcscrd.ServiceImportCRD, &crd.Object); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m := v.(map[string]any)
		m["served"], m["storage"] = m["name"] == "v1beta1", m["name"] == "v1beta1"
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	crd.SetResourceVersion(old.GetResourceVersion())
	if _, err := api.Update(t.Context(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("serve only v1beta1 of serviceimports: %v", err)
	}
}

// TestMulticlusterVersionUpgrade: a server reading v1alpha1 follows a CRD
// upgrade that stops serving it: the watch ends, the relist finds v1beta1,
// and imports old and new are served.
func TestMulticlusterVersionUpgrade(t *testing.T) {
	logs := captureLog(t)
	e := ownCluster(t, kubeapi.Options{ServiceImportVersions: []string{"v1alpha1"}})
	ns := e.namespace("mc-upgrade")
	old := mcClusterSetIP("old", []string{"10.247.40.50"}, mcPort("http", corev1.ProtocolTCP, 80))
	if _, err := e.mcs.MulticlusterV1alpha1().ServiceImports(ns).Create(e.ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := localityServer(t, e, "")
	oldName, newName := mcSvc("old", ns), mcSvc("new", ns)
	expect(t, s, "udp", oldName, dns.TypeA, answer(rrLine(oldName, "A", "10.247.40.50")), settleTimeout)

	serveOnlyV1beta1(t, e.cluster)
	imp := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: mcsv1beta1.ServiceImportSpec{
		Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.247.40.51"}, Ports: []mcsv1beta1.ServicePort{{Name: "http", Port: 80}}}}
	eventually(t, settleTimeout, "v1beta1 served", func() bool {
		_, err := e.mcs.MulticlusterV1beta1().ServiceImports(ns).Create(e.ctx, imp, metav1.CreateOptions{})
		return err == nil
	})
	expect(t, s, "udp", newName, dns.TypeA, answer(rrLine(newName, "A", "10.247.40.51")), settleTimeout)
	expect(t, s, "udp", oldName, dns.TypeA, answer(rrLine(oldName, "A", "10.247.40.50")), changeTimeout)
	if logs.count("the API server no longer serves v1alpha1; reading multicluster.x-k8s.io/v1beta1") != 1 {
		t.Error("the log does not say once that the version read changed")
	}
}
