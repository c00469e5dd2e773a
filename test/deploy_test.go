package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/schemadns/schemadns/test/kubeapi"
)

// The deploy/ manifests, proven against the real API server: every overlay
// is accepted by a server-side dry run; the ClusterRole is exactly what the
// Corefile needs (the binary syncs with a token of the ServiceAccount, and
// names the missing permission when any one rule is taken away); and the
// node-local cache's Corefile in front of the cluster DNS's resolves the
// example Pod's short names through gensearchpath and edns0autopath.

// deployTrees are the kustomize directories, base first.
var deployTrees = []string{
	"base",
	"overlays/pods-verified",
	"overlays/namespace-labels",
	"overlays/multicluster",
	"overlays/node-local",
	"overlays/autoscaler",
}

// rendered is one kustomize tree rendered by `kubectl kustomize`.
type rendered struct {
	yaml    []byte
	objects []*unstructured.Unstructured
}

// renderDeploy renders deploy/<tree> with the kubectl of the tools cache.
func renderDeploy(t *testing.T, tree string) rendered {
	t.Helper()
	kubectl := kubectlPath(t)
	out, err := exec.Command(kubectl, "kustomize", filepath.Join("..", "deploy", tree)).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/%s: %v\n%s", tree, err, stderrOf(err))
	}
	r := rendered{yaml: out}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("deploy/%s: decode: %v", tree, err)
		}
		if obj != nil {
			r.objects = append(r.objects, &unstructured.Unstructured{Object: obj})
		}
	}
	return r
}

func kubectlPath(t *testing.T) string {
	t.Helper()
	path, err := kubeapi.Kubectl(t.Context())
	if err != nil {
		t.Fatalf("kubectl: %v", err)
	}
	return path
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

// find returns the one object of kind and name; it fails the test when
// there is none.
func (r rendered) find(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %q in the rendered manifests", kind, name)
	return nil
}

// typed converts u into T.
func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("convert %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// corefileOf is the Corefile that workload kind/name mounts from its
// "config" volume: found through the volume, so the test follows the
// hashed ConfigMap name the way the kubelet does.
func (r rendered) corefileOf(t *testing.T, kind, name string) string {
	t.Helper()
	w := r.find(t, kind, name)
	vols, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "volumes")
	cmName := ""
	for _, v := range vols {
		if v, ok := v.(map[string]any); ok && v["name"] == "config" {
			cmName, _, _ = unstructured.NestedString(v, "configMap", "name")
		}
	}
	if cmName == "" {
		t.Fatalf("%s %s mounts no ConfigMap as volume config", kind, name)
	}
	cm := typed[corev1.ConfigMap](t, r.find(t, "ConfigMap", cmName))
	cf, ok := cm.Data["Corefile"]
	if !ok {
		t.Fatalf("ConfigMap %s has no Corefile", cmName)
	}
	return cf
}

// examplePod is the node-local overlay's example Pod, which the overlay
// does not apply.
func examplePod(t *testing.T) ([]byte, *corev1.Pod) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "overlays", "node-local", "example-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&obj); err != nil {
		t.Fatalf("example-pod.yaml: %v", err)
	}
	return data, typed[corev1.Pod](t, &unstructured.Unstructured{Object: obj})
}

// TestDeployDryRun: the API server accepts every object of every tree,
// validated and admitted as for real (`kubectl apply --dry-run=server`).
func TestDeployDryRun(t *testing.T) {
	c := kubeapi.Shared(t)
	kubectl := kubectlPath(t)
	podYAML, _ := examplePod(t)
	for _, tree := range append(deployTrees, "example-pod.yaml") {
		t.Run(strings.ReplaceAll(tree, "/", "_"), func(t *testing.T) {
			manifests, objects := podYAML, 1
			if tree != "example-pod.yaml" {
				r := renderDeploy(t, tree)
				manifests, objects = r.yaml, len(r.objects)
			}
			cmd := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "apply", "--dry-run=server", "-f", "-")
			cmd.Stdin = bytes.NewReader(manifests)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server deploy/%s: %v\n%s", tree, err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != objects {
				t.Errorf("%d objects rendered, %d applied:\n%s", objects, len(lines), out)
			}
			for _, l := range lines {
				if !strings.HasSuffix(l, "(server dry run)") {
					t.Errorf("unexpected output line %q", l)
				}
			}
		})
	}
}

// rbacCase is the cluster-DNS part of a tree: its Corefile and ClusterRole.
type rbacCase struct {
	tree     string
	corefile string
	role     *rbacv1.ClusterRole
}

func clusterDNSOf(t *testing.T, tree string) rbacCase {
	t.Helper()
	r := renderDeploy(t, tree)
	role := typed[rbacv1.ClusterRole](t, r.find(t, "ClusterRole", "system:schemadns"))
	binding := typed[rbacv1.ClusterRoleBinding](t, r.find(t, "ClusterRoleBinding", "system:schemadns"))
	sa := r.find(t, "ServiceAccount", "coredns")
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Name != sa.GetName() || binding.Subjects[0].Namespace != sa.GetNamespace() {
		t.Fatalf("deploy/%s: the binding %+v does not bind ClusterRole %s to ServiceAccount %s/%s",
			tree, binding, role.Name, sa.GetNamespace(), sa.GetName())
	}
	deploy := r.find(t, "Deployment", "coredns")
	if got, _, _ := unstructured.NestedString(deploy.Object, "spec", "template", "spec", "serviceAccountName"); got != sa.GetName() {
		t.Fatalf("deploy/%s: the Deployment runs as ServiceAccount %q, want %q", tree, got, sa.GetName())
	}
	return rbacCase{tree: tree, corefile: r.corefileOf(t, "Deployment", "coredns"), role: role}
}

// resourceOf names a rule's resource as the log does: "services",
// "endpointslices.discovery.k8s.io".
func resourceOf(rule rbacv1.PolicyRule) string {
	if g := rule.APIGroups[0]; g != "" {
		return rule.Resources[0] + "." + g
	}
	return rule.Resources[0]
}

// TestDeployLeastPrivilege runs the cluster DNS Corefile of each tree as
// a ServiceAccount bound to the tree's ClusterRole, with a kubeconfig that
// carries only a token from the TokenRequest API: it syncs and answers.
// Then, for each rule, as a ServiceAccount bound to a copy without that
// rule: start-up logs one line naming the missing permission, readiness
// stays failed, and cluster names get SERVFAIL, never a wrong answer.
func TestDeployLeastPrivilege(t *testing.T) {
	c := kubeapi.Shared(t)
	bin := coreDNSBinary(t)
	upstream := startStubUpstream(t)
	for _, tree := range deployTrees[:4] {
		rc := clusterDNSOf(t, tree)
		for _, rule := range rc.role.Rules {
			if len(rule.APIGroups) != 1 || len(rule.Resources) != 1 || strings.Join(rule.Verbs, ",") != "list,watch" || len(rule.ResourceNames) != 0 {
				t.Errorf("deploy/%s: rule %+v is not list and watch on one resource", tree, rule)
			}
		}
		t.Run(strings.ReplaceAll(tree, "/", "_"), func(t *testing.T) {
			t.Run("all rules", func(t *testing.T) {
				t.Parallel()
				p := runAsServiceAccount(t, c, bin, rc, rc.role.Rules, upstream.addr)
				p.waitReady(t, true)
				p.expectAnswer(t, "kubernetes.default.svc.cluster.local.", dns.RcodeSuccess, "kubernetes.default.svc.cluster.local.\t30\tIN\tA\t10.96.0.1")
				if strings.Contains(p.log(), "permission denied") {
					t.Errorf("a permission was reported missing:\n%s", p.log())
				}
			})
			for i, rule := range rc.role.Rules {
				res := resourceOf(rule)
				t.Run("without "+res, func(t *testing.T) {
					t.Parallel()
					rules := append(append([]rbacv1.PolicyRule{}, rc.role.Rules[:i]...), rc.role.Rules[i+1:]...)
					p := runAsServiceAccount(t, c, bin, rc, rules, upstream.addr)
					want := fmt.Sprintf(`may not list or watch %s cluster-wide; the ClusterRole bound to this server needs "list" and "watch" on %s`, res, res)
					eventually(t, 30*time.Second, "the log names the missing permission", func() bool {
						return strings.Contains(p.log(), want)
					})
					// The start-up timeout (5 s) passes: serving starts,
					// and a name of the plugin that lacks the permission
					// gets SERVFAIL.
					p.expectAnswer(t, probeName(rule), dns.RcodeServerFailure, "")
					p.waitReady(t, false)
					if n := strings.Count(p.log(), "permission denied"); n != 1 {
						t.Errorf("%d lines say permission denied, want 1:\n%s", n, p.log())
					}
				})
			}
		})
	}
}

// probeName is a name served by the plugin that needs rule: multicluster
// for serviceimports, kubeschema for the rest.
func probeName(rule rbacv1.PolicyRule) string {
	if rule.Resources[0] == "serviceimports" {
		return "kubernetes.default.svc.clusterset.local."
	}
	return "kubernetes.default.svc.cluster.local."
}

// TestDeployWrongCredentials: a kubeconfig whose token the API server
// does not accept gives one log line saying so (not "unreachable"), and
// readiness stays failed.
func TestDeployWrongCredentials(t *testing.T) {
	c := kubeapi.Shared(t)
	bin := coreDNSBinary(t)
	rc := clusterDNSOf(t, "base")
	kubeconfig, err := c.KubeconfigForToken("not-a-valid-token")
	if err != nil {
		t.Fatal(err)
	}
	p := startClusterDNS(t, bin, rc.corefile, kubeconfig, startStubUpstream(t).addr)
	want := "services: the API server rejects this server's credentials (401 Unauthorized)"
	eventually(t, 30*time.Second, "the log says the credentials are rejected", func() bool {
		return strings.Contains(p.log(), want)
	})
	p.expectAnswer(t, "kubernetes.default.svc.cluster.local.", dns.RcodeServerFailure, "")
	p.waitReady(t, false)
	if n := strings.Count(p.log(), want); n != 1 {
		t.Errorf("%d lines say %q, want 1:\n%s", n, want, p.log())
	}
	if strings.Contains(p.log(), "unreachable") {
		t.Errorf("rejected credentials reported as an unreachable API server:\n%s", p.log())
	}
}

// runAsServiceAccount creates a ServiceAccount in a namespace of its own,
// a ClusterRole with rules (named after the test) and the binding, mints a
// token for the ServiceAccount and starts the cluster DNS with a
// kubeconfig carrying only that token.
func runAsServiceAccount(t *testing.T, c *kubeapi.Cluster, bin string, rc rbacCase, rules []rbacv1.PolicyRule, upstream string) *coreDNSProcess {
	t.Helper()
	ctx := t.Context()
	kube := c.Client()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "deploy-rbac-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role := rc.role.DeepCopy()
	role.ObjectMeta = metav1.ObjectMeta{Name: rc.role.Name + ":" + ns.Name, Labels: rc.role.Labels}
	role.Rules = rules
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: sa.Name}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	token, err := c.ServiceAccountToken(ctx, ns.Name, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := c.KubeconfigForToken(token)
	if err != nil {
		t.Fatal(err)
	}
	return startClusterDNS(t, bin, rc.corefile, kubeconfig, upstream)
}

// coreDNSProcess is the binary running a Corefile, with its log.
type coreDNSProcess struct {
	dnsAddr, readyURL string
	mu                sync.Mutex
	out               bytes.Buffer
}

func (p *coreDNSProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *coreDNSProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startClusterDNS runs the cluster DNS Corefile of deploy/ on loopback:
// the edits are only those that put it on free loopback ports, point it at
// the test's API server and upstream; each edit must apply, so a change to
// the Corefile that this test no longer understands fails it.
func startClusterDNS(t *testing.T, bin, corefile, kubeconfig, upstream string) *coreDNSProcess {
	t.Helper()
	dnsPort, readyPort := freeLoopbackPort(t), freeLoopbackPort(t)
	cf := editCorefile(t, corefile, []edit{
		{".:53 {\n", fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n", dnsPort)},
		{"    health {\n", "    health 127.0.0.1:0 {\n"},
		{"    ready\n", fmt.Sprintf("    ready 127.0.0.1:%d\n", readyPort)},
		{"    prometheus :9153\n", "    prometheus 127.0.0.1:0\n"},
		{"    kubeschema cluster.local in-addr.arpa ip6.arpa {\n", "    kubeschema cluster.local in-addr.arpa ip6.arpa {\n        kubeconfig " + kubeconfig + "\n"},
		{"    forward . /etc/resolv.conf {\n", "    forward . " + upstream + " {\n"},
	})
	if strings.Contains(cf, "    multicluster clusterset.local") {
		cf = editCorefile(t, cf, []edit{{"    multicluster clusterset.local in-addr.arpa ip6.arpa {\n",
			"    multicluster clusterset.local in-addr.arpa ip6.arpa {\n        kubeconfig " + kubeconfig + "\n"}})
	}
	p := &coreDNSProcess{dnsAddr: fmt.Sprintf("127.0.0.1:%d", dnsPort), readyURL: fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)}
	runCorefile(t, bin, cf, p)
	return p
}

// edit replaces the one occurrence of old with new.
type edit struct{ old, new string }

func editCorefile(t *testing.T, corefile string, edits []edit) string {
	t.Helper()
	for _, e := range edits {
		if n := strings.Count(corefile, e.old); n != 1 {
			t.Fatalf("the Corefile has %q %d times, want once:\n%s", e.old, n, corefile)
		}
		corefile = strings.Replace(corefile, e.old, e.new, 1)
	}
	return corefile
}

// runCorefile starts bin on corefile, its output going to p, and stops it
// when the test ends.
func runCorefile(t *testing.T, bin, corefile string, p *coreDNSProcess) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-conf", path)
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("Corefile:\n%s\nlog:\n%s", corefile, p.log())
		}
	})
}

// readyStatus is the HTTP status of /ready, 0 when it does not answer.
func (p *coreDNSProcess) readyStatus() int {
	resp, err := (&http.Client{Timeout: time.Second}).Get(p.readyURL)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady waits for /ready to answer 200 (ready) or, for !ready, checks
// that it answers and keeps failing for three seconds.
func (p *coreDNSProcess) waitReady(t *testing.T, ready bool) {
	t.Helper()
	if ready {
		eventually(t, 30*time.Second, "/ready answers 200", func() bool { return p.readyStatus() == http.StatusOK })
		return
	}
	eventually(t, 30*time.Second, "/ready answers", func() bool { return p.readyStatus() != 0 })
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if s := p.readyStatus(); s == http.StatusOK {
			t.Fatalf("/ready answered 200 without the permission")
		}
	}
}

// expectAnswer waits for the server to answer name (A) and checks the
// rcode and, when want is set, the one answer record.
func (p *coreDNSProcess) expectAnswer(t *testing.T, name string, rcode int, want string) {
	t.Helper()
	var r *dns.Msg
	eventually(t, 30*time.Second, "the server answers "+name, func() bool {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		var err error
		r, _, err = (&dns.Client{Timeout: time.Second}).Exchange(m, p.dnsAddr)
		return err == nil
	})
	if r.Rcode != rcode {
		t.Fatalf("%s: rcode %s, want %s\n%s", name, dns.RcodeToString[r.Rcode], dns.RcodeToString[rcode], r)
	}
	if want != "" {
		if got := strings.TrimSpace(rrStrings(r.Answer)); got != want {
			t.Errorf("%s: answer\n%s\nwant\n%s", name, got, want)
		}
	} else if len(r.Answer) != 0 {
		t.Errorf("%s: answer %s, want none", name, rrStrings(r.Answer))
	}
}

// TestDeployNodeLocalAutopath runs the node-local overlay's two Corefiles
// together, as a node would: the cluster DNS (kube-dns) and the node-local
// cache, each on port 53 of a loopback address standing for 10.96.0.10 and
// 169.254.20.10, with the node's resolv.conf naming a stub upstream. The
// example Pod's dnsConfig, as a resolv.conf, then resolves short names
// with glibc: the pod's own namespace, another namespace, and a name
// outside the cluster.
func TestDeployNodeLocalAutopath(t *testing.T) {
	c := kubeapi.Shared(t)
	bin := coreDNSBinary(t)
	r := renderDeploy(t, "overlays/node-local")
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

	// The services the pod looks up, in its namespace and another.
	kube := c.Client()
	ctx := t.Context()
	other, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "deploy-nl-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web := createClusterIPService(t, pod.Namespace, "deploy-web")
	db := createClusterIPService(t, other.Name, "db")

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

	clusterCF := editCorefile(t, r.corefileOf(t, "Deployment", "coredns"), []edit{
		{".:53 {\n", ".:53 {\n    bind " + cluster + "\n"},
		{"    health {\n", "    health 127.0.0.1:0 {\n"},
		{"    ready\n", "    ready 127.0.0.1:0\n"},
		{"    prometheus :9153\n", "    prometheus 127.0.0.1:0\n"},
		{"    kubeschema cluster.local in-addr.arpa ip6.arpa {\n", "    kubeschema cluster.local in-addr.arpa ip6.arpa {\n        kubeconfig " + c.Kubeconfig + "\n"},
		{"    forward . /etc/resolv.conf {\n", "    forward . " + upstream.addr + " {\n"},
	})
	runCorefile(t, bin, clusterCF, &coreDNSProcess{})

	nodeCF := r.corefileOf(t, "DaemonSet", "node-local-dns")
	for _, e := range []edit{
		{"forward . /etc/resolv.conf\n", "forward . " + upstream.addr + "\n"},
		{"search /etc/resolv.conf\n", "search " + nodeResolv + "\n"},
		{"prometheus :9253", "prometheus 127.0.0.1:0"},
		{nodeLocalIP + ":8080", "127.0.0.1:0"},
		{nodeLocalIP + ":8181", "127.0.0.1:0"},
		{nodeLocalIP, node},
		{clusterDNSIP, cluster},
	} {
		if !strings.Contains(nodeCF, e.old) {
			t.Fatalf("the node-local Corefile has no %q:\n%s", e.old, nodeCF)
		}
		nodeCF = strings.ReplaceAll(nodeCF, e.old, e.new)
	}
	nodeProc := &coreDNSProcess{}
	runCorefile(t, bin, nodeCF, nodeProc)

	// Both servers answer and the cluster DNS has synced.
	eventually(t, 30*time.Second, "the cluster DNS serves db."+other.Name, func() bool {
		r, err := apExchange(cluster+":53", "db."+other.Name+".svc.cluster.local.", dns.TypeA)
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
		{"db." + other.Name, "db." + other.Name + ".svc.cluster.local", db},
		{apExternal, apExternal, apExternal4},
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

// createClusterIPService creates a ClusterIP service, deleted when the
// test ends, and returns its cluster IP.
func createClusterIPService(t *testing.T, ns, name string) string {
	t.Helper()
	kube := kubeapi.Shared(t).Client()
	svc, err := kube.CoreV1().Services(ns).Create(t.Context(), ksClusterIP(name, ksPort("http", corev1.ProtocolTCP, 80)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return svc.Spec.ClusterIP
}

// TestDeployWiring checks what a dry run cannot: that every tree runs the
// same pinned image, and that the probes and ports of the Deployment and
// the DaemonSet point where their Corefiles listen.
func TestDeployWiring(t *testing.T) {
	base := renderDeploy(t, "base")
	want := containerImage(t, base.find(t, "Deployment", "coredns"))
	if !strings.HasPrefix(want, "schemadns/coredns:") {
		t.Fatalf("the base runs %q, want schemadns/coredns with a tag", want)
	}
	for _, tree := range deployTrees {
		r := renderDeploy(t, tree)
		for _, o := range r.objects {
			if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
				continue
			}
			if got := containerImage(t, o); strings.HasPrefix(got, "schemadns/coredns") && got != want {
				t.Errorf("deploy/%s: %s %s runs %q, the base %q", tree, o.GetKind(), o.GetName(), got, want)
			}
		}

		cf := r.corefileOf(t, "Deployment", "coredns")
		checkWiring(t, tree, r.find(t, "Deployment", "coredns"), cf, wiring{
			ready: "8181", health: "8080", metrics: "9153",
			corefile: []string{"\n    ready\n", "\n    health {\n", "\n    prometheus :9153\n", ".:53 {"},
		})
	}
	nl := renderDeploy(t, "overlays/node-local")
	checkWiring(t, "overlays/node-local", nl.find(t, "DaemonSet", "node-local-dns"), nl.corefileOf(t, "DaemonSet", "node-local-dns"), wiring{
		ready: "8181", health: "8080", metrics: "9253", host: "169.254.20.10",
		corefile: []string{"ready 169.254.20.10:8181\n", "health 169.254.20.10:8080 {\n", "prometheus :9253\n", "bind 169.254.20.10\n"},
	})
}

// wiring is where a workload's probes and ports must point, and the
// Corefile lines that listen there.
type wiring struct {
	ready, health, metrics, host string
	corefile                     []string
}

func checkWiring(t *testing.T, tree string, w *unstructured.Unstructured, corefile string, want wiring) {
	t.Helper()
	for _, line := range want.corefile {
		if !strings.Contains(corefile, line) {
			t.Errorf("deploy/%s: the Corefile of %s has no %q", tree, w.GetName(), line)
		}
	}
	c := firstContainer(t, w)
	probe := func(what string, p *corev1.Probe, path, port string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != port || p.HTTPGet.Host != want.host {
			t.Errorf("deploy/%s: %s %s probe %+v, want GET %s:%s%s", tree, w.GetName(), what, p, want.host, port, path)
		}
	}
	probe("readiness", c.ReadinessProbe, "/ready", want.ready)
	probe("liveness", c.LivenessProbe, "/health", want.health)
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)] = true
	}
	for _, p := range []string{"53/UDP", "53/TCP", want.metrics + "/TCP"} {
		if !ports[p] {
			t.Errorf("deploy/%s: %s declares no port %s (has %v)", tree, w.GetName(), p, ports)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.Capabilities == nil ||
		!slices.Contains(sc.Capabilities.Add, "NET_BIND_SERVICE") || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("deploy/%s: %s security context %+v, want non-root with only NET_BIND_SERVICE (the image's file capability)", tree, w.GetName(), sc)
	}
}

func firstContainer(t *testing.T, w *unstructured.Unstructured) corev1.Container {
	t.Helper()
	tmpl, ok, _ := unstructured.NestedMap(w.Object, "spec", "template")
	if !ok {
		t.Fatalf("%s %s has no pod template", w.GetKind(), w.GetName())
	}
	pt := typed[corev1.PodTemplateSpec](t, &unstructured.Unstructured{Object: tmpl})
	if len(pt.Spec.Containers) == 0 {
		t.Fatalf("%s %s has no containers", w.GetKind(), w.GetName())
	}
	return pt.Spec.Containers[0]
}

func containerImage(t *testing.T, w *unstructured.Unstructured) string {
	t.Helper()
	return firstContainer(t, w).Image
}
