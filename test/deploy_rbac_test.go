package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The ClusterRole of deploy/, proven against the real API server: exactly
// what the Corefile needs, and a clear log line for a missing permission
// or rejected credentials.

// rbacCase is the cluster DNS of a combination of components: its config
// and ClusterRole.
type rbacCase struct {
	combo  combo
	config config
	role   *rbacv1.ClusterRole
}

func clusterDNSOf(t *testing.T, c combo) rbacCase {
	t.Helper()
	r := renderCombo(t, c)
	role := typed[rbacv1.ClusterRole](t, r.find(t, "ClusterRole", "system:schemadns"))
	binding := typed[rbacv1.ClusterRoleBinding](t, r.find(t, "ClusterRoleBinding", "system:schemadns"))
	sa := r.find(t, "ServiceAccount", "coredns")
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Name != sa.GetName() || binding.Subjects[0].Namespace != sa.GetNamespace() {
		t.Fatalf("%s: the binding %+v does not bind ClusterRole %s to ServiceAccount %s/%s",
			c, binding, role.Name, sa.GetNamespace(), sa.GetName())
	}
	deploy := r.find(t, "Deployment", "coredns")
	if got, _, _ := unstructured.NestedString(deploy.Object, "spec", "template", "spec", "serviceAccountName"); got != sa.GetName() {
		t.Fatalf("%s: the Deployment runs as ServiceAccount %q, want %q", c, got, sa.GetName())
	}
	return rbacCase{combo: c, config: r.configOf(t, "Deployment", "coredns"), role: role}
}

// key tells cluster DNS setups apart: the config and the rules.
func (rc rbacCase) key() string { return fmt.Sprintf("%s%v", rc.config, rc.role.Rules) }

// clusterDNSCases are the cluster DNS setups of every combination of
// components, each once (node-local and autoscaler change neither), from
// the smallest combination that makes it.
func clusterDNSCases(t *testing.T) []rbacCase {
	t.Helper()
	var cases []rbacCase
	seen := map[string]bool{}
	for _, c := range allCombos() {
		rc := clusterDNSOf(t, c)
		if !seen[rc.key()] {
			seen[rc.key()] = true
			cases = append(cases, rc)
		}
	}
	return cases
}

// TestDeployLeastPrivilege runs the cluster DNS config of each setup that
// a combination of components makes as a ServiceAccount bound to its
// ClusterRole, with a kubeconfig that carries only a token from the
// TokenRequest API: it syncs and answers, and each component's option is
// at work (componentProbes: the Corefile imported what the components
// added). Then, for the base, each component alone and all components
// together (the union of the RBAC), for each rule, as a ServiceAccount
// bound to a copy without that rule: start-up logs one line naming the
// missing permission, readiness stays failed, and cluster names get
// SERVFAIL, never a wrong answer. The other combinations' rules are those
// of their parts (TestDeployComponentsCompose), each shown needed by the
// part that adds it.
func TestDeployLeastPrivilege(t *testing.T) {
	c := kubeapi.Shared(t)
	bin := coreDNSBinary(t)
	upstream := startStubUpstream(t)
	probes := newComponentProbes(t)
	checkProbesCover(t, probes)
	// The setups whose every rule is taken away in turn: the base, each
	// component alone, all of them.
	removals := map[string]bool{}
	for _, c := range append([]combo{{}, slices.Clone(deployComponents)}, singles()...) {
		removals[clusterDNSOf(t, c).key()] = true
	}
	for _, rc := range clusterDNSCases(t) {
		for _, rule := range rc.role.Rules {
			if len(rule.APIGroups) != 1 || len(rule.Resources) != 1 || strings.Join(rule.Verbs, ",") != "list,watch" || len(rule.ResourceNames) != 0 {
				t.Errorf("%s: rule %+v is not list and watch on one resource", rc.combo, rule)
			}
		}
		t.Run(rc.combo.String(), func(t *testing.T) {
			t.Run("all rules", func(t *testing.T) {
				t.Parallel()
				p := runAsServiceAccount(t, c, bin, rc, rc.role.Rules, upstream.addr)
				p.waitReady(t, true)
				p.expectAnswer(t, "kubernetes.default.svc.cluster.local.", dns.RcodeSuccess, "kubernetes.default.svc.cluster.local.\t30\tIN\tA\t10.96.0.1")
				for _, probe := range probes {
					want := probe.without
					if rc.combo.has(probe.component) {
						want = probe.with
					}
					p.expectAnswer(t, probe.name, want.rcode, want.answer)
				}
				if strings.Contains(p.log(), "permission denied") {
					t.Errorf("a permission was reported missing:\n%s", p.log())
				}
			})
			if !removals[rc.key()] {
				return
			}
			for i, rule := range rc.role.Rules {
				res := resourceOf(rule)
				rules := append(append([]rbacv1.PolicyRule{}, rc.role.Rules[:i]...), rc.role.Rules[i+1:]...)
				if optionalResources[res] {
					t.Run("without "+res, func(t *testing.T) {
						t.Parallel()
						expectServesWithout(t, runAsServiceAccount(t, c, bin, rc, rules, upstream.addr))
					})
					continue
				}
				t.Run("without "+res, func(t *testing.T) {
					t.Parallel()
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

// checkResourceNames: every name that a Role or ClusterRole of r grants
// by resourceNames is an object of r of that resource, in the Role's
// namespace. kustomize renames every resourceNames entry equal to the name
// of a ConfigMap it generates to the ConfigMap's hashed name, whatever
// resource the rule is for (kubernetes-sigs/kustomize#4254): the
// autoscaler's rule for the coredns Deployment would then name no object.
func checkResourceNames(t *testing.T, what string, r rendered) {
	t.Helper()
	for _, o := range r.objects {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		for _, rule := range typed[rbacv1.ClusterRole](t, o).Rules {
			for _, res := range rule.Resources {
				plural, _, _ := strings.Cut(res, "/")
				for _, name := range rule.ResourceNames {
					if !slices.ContainsFunc(r.objects, func(x *unstructured.Unstructured) bool {
						return strings.ToLower(x.GetKind())+"s" == plural && x.GetName() == name && x.GetNamespace() == o.GetNamespace()
					}) {
						t.Errorf("%s: %s %s grants %v on %s %q, which is not in the manifests", what, o.GetKind(), o.GetName(), rule.Verbs, res, name)
					}
				}
			}
		}
	}
}

// resourceOf names a rule's resource as the log does: "services",
// "endpointslices.discovery.k8s.io".
func resourceOf(rule rbacv1.PolicyRule) string {
	if g := rule.APIGroups[0]; g != "" {
		return rule.Resources[0] + "." + g
	}
	return rule.Resources[0]
}

// optionalResources are read where the API server serves them, and a
// server works without them: multicluster's id.k8s.io ClusterProperty
// (the shared API server does not serve about.k8s.io; without the
// permission where it does, the ID is unknown and one line says so).
var optionalResources = map[string]bool{"clusterproperties.about.k8s.io": true}

// expectServesWithout: a server without an optional permission is ready,
// answers, and reports no missing permission.
func expectServesWithout(t *testing.T, p *coreDNSProcess) {
	t.Helper()
	p.waitReady(t, true)
	p.expectAnswer(t, "kubernetes.default.svc.cluster.local.", dns.RcodeSuccess, "kubernetes.default.svc.cluster.local.\t30\tIN\tA\t10.96.0.1")
	if strings.Contains(p.log(), "permission denied") {
		t.Errorf("a permission was reported missing:\n%s", p.log())
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
	rc := clusterDNSOf(t, combo{})
	kubeconfig, err := c.KubeconfigForToken("not-a-valid-token")
	if err != nil {
		t.Fatal(err)
	}
	p := startClusterDNS(t, bin, rc.config, kubeconfig, startStubUpstream(t).addr)
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

// runAsServiceAccount creates a ServiceAccount in a namespace of its own
// (emptied when the test ends),
// a ClusterRole with rules (named after the test) and the binding, mints a
// token for the ServiceAccount and starts the cluster DNS with a
// kubeconfig carrying only that token.
func runAsServiceAccount(t *testing.T, c *kubeapi.Cluster, bin string, rc rbacCase, rules []rbacv1.PolicyRule, upstream string) *coreDNSProcess {
	t.Helper()
	ctx := t.Context()
	kube := c.Client()
	ns := newKubeEnv(t).namespace("deploy-rbac")
	sa, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role := rc.role.DeepCopy()
	role.ObjectMeta = metav1.ObjectMeta{Name: rc.role.Name + ":" + ns, Labels: rc.role.Labels}
	role.Rules = rules
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	token, err := c.ServiceAccountToken(ctx, ns, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := c.KubeconfigForToken(token)
	if err != nil {
		t.Fatal(err)
	}
	return startClusterDNS(t, bin, rc.config, kubeconfig, upstream)
}
