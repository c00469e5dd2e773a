package test

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// How the components of deploy/components combine over deploy/base. Each
// is a kustomize Component that an operator lists, in any subset, under
// `components:` of a kustomization whose resource is the base. The cluster
// DNS's Corefile composes through files: it imports every *.kubeschema key
// of its ConfigMap inside the kubeschema block and every *.server key in
// its server block, and a component adds such a key (pods-verified
// replaces the base's pods.kubeschema) with configMapGenerator behavior
// merge. Rules are added to the ClusterRole with JSON patches; node-local
// and autoscaler add objects of their own.

// deployComponents are the directories of deploy/components. A new
// component is one more name here: the tests then render and dry-run it
// in every combination with the others, check that each combination is
// the sum of its parts, and run the cluster DNS of each combination that
// changes it.
var deployComponents = []string{
	"pods-verified",
	"namespace-labels",
	"multicluster",
	"node-local",
	"autoscaler",
	"monitoring",
}

// combo is a set of components, in the order of deployComponents.
type combo []string

func (c combo) String() string {
	if len(c) == 0 {
		return "base"
	}
	return strings.Join(c, "+")
}

func (c combo) has(name string) bool { return slices.Contains(c, name) }

// allCombos is every subset of deployComponents, smallest first: the base
// alone, each component alone, the pairs, and so on to all of them.
func allCombos() []combo {
	var out []combo
	for set := range 1 << len(deployComponents) {
		c := combo{}
		for i, name := range deployComponents {
			if set&(1<<i) != 0 {
				c = append(c, name)
			}
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b combo) int { return cmp.Compare(len(a), len(b)) })
	return out
}

// singles is each component alone.
func singles() []combo {
	var out []combo
	for _, name := range deployComponents {
		out = append(out, combo{name})
	}
	return out
}

// renderCombo renders deploy/base with the components of c through a
// kustomization such as an operator writes: the base as its resource, the
// components listed under components.
func renderCombo(t *testing.T, c combo) rendered {
	t.Helper()
	return renderDir(t, c.String(), func() string {
		deploy, err := filepath.Abs(filepath.Join("..", "deploy"))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		rel := func(p string) string {
			r, err := filepath.Rel(dir, filepath.Join(deploy, p))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel("base") + "\n"
		if len(c) > 0 {
			k += "components:\n"
			for _, name := range c {
				k += "  - " + rel(filepath.Join("components", name)) + "\n"
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	})
}

// TestDeployComponentsCompose: every combination of components is the sum
// of its parts, nothing lost and nothing added:
//   - its objects are the base's and those each component adds, each once;
//   - each workload mounts the config of the base with every key its
//     components set (no two set the same key);
//   - each ServiceAccount is granted exactly what the base and the
//     components grant it alone: the union of the RBAC gives no subject
//     more than its parts;
//   - each overlay is its component over the base, rendered the same.
//
// That the composed configs run, and their RBAC is least privilege, is
// TestDeployLeastPrivilege's part; that the API server takes them,
// TestDeployDryRun's.
func TestDeployComponentsCompose(t *testing.T) {
	base := renderCombo(t, combo{})
	alone := map[string]rendered{}
	for _, c := range singles() {
		alone[c[0]] = renderCombo(t, c)
	}
	for _, c := range allCombos() {
		r := renderCombo(t, c)
		wantIDs, wantGrants := map[string]*unstructured.Unstructured{}, map[string][]string{}
		for _, p := range append([]rendered{base}, partsOf(c, alone)...) {
			maps.Copy(wantIDs, objectIDs(t, p))
			for sa, rules := range grants(t, p) {
				wantGrants[sa] = slices.Compact(slices.Sorted(slices.Values(append(wantGrants[sa], rules...))))
			}
		}
		got := objectIDs(t, r)
		if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wantIDs)); !slices.Equal(g, w) {
			t.Errorf("%s: objects\n%s\nwant the base's and its components'\n%s", c, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		// A component's own labels, annotations or images transformer
		// would reach every object of the build: components leave the
		// base's objects' metadata as it is.
		for id, b := range objectIDs(t, base) {
			if o := got[id]; o != nil && (!maps.Equal(o.GetLabels(), b.GetLabels()) || !maps.Equal(o.GetAnnotations(), b.GetAnnotations())) {
				t.Errorf("%s: %s has labels %v and annotations %v, the base's %v and %v", c, id, o.GetLabels(), o.GetAnnotations(), b.GetLabels(), b.GetAnnotations())
			}
		}
		for _, w := range r.objects {
			if !mountsConfig(t, w) {
				continue
			}
			if got, want := r.configOf(t, w.GetKind(), w.GetName()), composedConfig(t, c, base, alone, w); got.String() != want.String() {
				t.Errorf("%s: %s %s mounts\n%s\nwant\n%s", c, w.GetKind(), w.GetName(), got, want)
			}
		}
		if got := grants(t, r); !maps.EqualFunc(got, wantGrants, slices.Equal) {
			for _, sa := range slices.Sorted(maps.Keys(wantGrants)) {
				if !slices.Equal(got[sa], wantGrants[sa]) {
					t.Errorf("%s: ServiceAccount %s may\n  %s\nwant what the base and its components grant it\n  %s",
						c, sa, strings.Join(got[sa], "\n  "), strings.Join(wantGrants[sa], "\n  "))
				}
			}
		}
	}

	for _, name := range deployComponents {
		if _, err := os.Stat(filepath.Join("..", "deploy", "overlays", name)); err != nil {
			continue
		}
		if got := renderDeploy(t, "overlays/"+name); string(got.yaml) != string(alone[name].yaml) {
			t.Errorf("deploy/overlays/%s renders otherwise than the base with component %s:\n%s", name, name, got.yaml)
		}
	}
}

// partsOf is the renders of each component of c alone over the base.
func partsOf(c combo, alone map[string]rendered) []rendered {
	var parts []rendered
	for _, name := range c {
		parts = append(parts, alone[name])
	}
	return parts
}

// objectIDs is the objects of r by kind, namespace and name, less the
// ConfigMaps that workloads mount (their names carry a hash of the content;
// composedConfig checks those): a generated ConfigMap that a workload does
// not mount, a second coredns-config-<hash> say, stays in.
func objectIDs(t *testing.T, r rendered) map[string]*unstructured.Unstructured {
	t.Helper()
	mounted := map[string]bool{}
	for _, w := range r.objects {
		for _, v := range podTemplate(t, w).Spec.Volumes {
			if v.ConfigMap != nil {
				mounted[w.GetNamespace()+"/"+v.ConfigMap.Name] = true
			}
		}
	}
	ids := map[string]*unstructured.Unstructured{}
	for _, o := range r.objects {
		if o.GetKind() == "ConfigMap" && mounted[o.GetNamespace()+"/"+o.GetName()] {
			continue
		}
		id := fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		if ids[id] != nil {
			t.Errorf("%s twice", id)
		}
		ids[id] = o
	}
	return ids
}

// composedConfig is what workload w should mount in combination c: the
// base's config (where the base has w) with every key a component sets
// alone over the base. Two components that set one key to different
// content do not compose: the test fails.
func composedConfig(t *testing.T, c combo, base rendered, alone map[string]rendered, w *unstructured.Unstructured) config {
	t.Helper()
	kind, name := w.GetKind(), w.GetName()
	var baseCfg config
	if has(base, kind, name) {
		baseCfg = base.configOf(t, kind, name)
	}
	want, setBy := maps.Clone(baseCfg), map[string]string{}
	if want == nil {
		want = config{}
	}
	for _, comp := range c {
		if !has(alone[comp], kind, name) {
			continue
		}
		for file, content := range alone[comp].configOf(t, kind, name) {
			if v, ok := baseCfg[file]; ok && v == content {
				continue
			}
			if other, ok := setBy[file]; ok && want[file] != content {
				t.Errorf("components %s and %s both set %s of %s %s", other, comp, file, kind, name)
			}
			want[file], setBy[file] = content, comp
		}
	}
	return want
}

// mountsConfig reports whether w is a workload with a "config" volume
// from a ConfigMap: a server of deploy/ with its Corefile.
func mountsConfig(t *testing.T, w *unstructured.Unstructured) bool {
	t.Helper()
	return slices.ContainsFunc(podTemplate(t, w).Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "config" && v.ConfigMap != nil
	})
}

// has reports whether r holds an object of kind and name.
func has(r rendered, kind, name string) bool {
	return slices.ContainsFunc(r.objects, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == kind && o.GetName() == name
	})
}

// grants is what each ServiceAccount of r may do through the bindings of
// r, by "namespace/name": one line per rule and scope, sorted. A binding
// to a role or a subject that r does not hold fails the test: what it
// grants could not be known here.
func grants(t *testing.T, r rendered) map[string][]string {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	out := map[string][]string{}
	for _, o := range r.objects {
		switch o.GetKind() {
		case "ClusterRole":
			roles["ClusterRole "+o.GetName()] = typed[rbacv1.ClusterRole](t, o).Rules
		case "Role":
			roles["Role "+o.GetNamespace()+"/"+o.GetName()] = typed[rbacv1.Role](t, o).Rules
		case "ServiceAccount":
			out[o.GetNamespace()+"/"+o.GetName()] = nil
		}
	}
	for _, o := range r.objects {
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		scope, role := "cluster-wide", ""
		switch o.GetKind() {
		case "ClusterRoleBinding":
			b := typed[rbacv1.ClusterRoleBinding](t, o)
			ref, subjects, role = b.RoleRef, b.Subjects, "ClusterRole "+b.RoleRef.Name
		case "RoleBinding":
			b := typed[rbacv1.RoleBinding](t, o)
			ref, subjects, scope = b.RoleRef, b.Subjects, "in "+o.GetNamespace()
			role = "ClusterRole " + ref.Name
			if ref.Kind == "Role" {
				role = "Role " + o.GetNamespace() + "/" + ref.Name
			}
		default:
			continue
		}
		rules, ok := roles[role]
		if !ok {
			t.Errorf("%s %s binds %s, which is not in the manifests", o.GetKind(), o.GetName(), role)
		}
		for _, s := range subjects {
			sa := s.Namespace + "/" + s.Name
			if _, ok := out[sa]; s.Kind != rbacv1.ServiceAccountKind || !ok {
				t.Errorf("%s %s binds %s %s, not a ServiceAccount of the manifests", o.GetKind(), o.GetName(), s.Kind, sa)
				continue
			}
			for _, rule := range rules {
				out[sa] = append(out[sa], fmt.Sprintf("%s: %s on %s %s %s of groups %q",
					scope, rule.Verbs, rule.Resources, rule.ResourceNames, rule.NonResourceURLs, rule.APIGroups))
			}
		}
	}
	for sa, rules := range out {
		slices.Sort(rules)
		if n := len(slices.Compact(slices.Clone(rules))); n != len(rules) {
			t.Errorf("ServiceAccount %s is granted a rule twice (two components add it):\n  %s", sa, strings.Join(rules, "\n  "))
		}
	}
	return out
}

// componentProbe is a name that the cluster DNS answers one way with a
// component and another way without: it shows the component's option at
// work, so a config whose imports left the option out does not pass.
type componentProbe struct {
	component, name string
	with, without   reply
}

// reply is an rcode and, for NOERROR, the one answer record.
type reply struct {
	rcode  int
	answer string
}

// aReply is an answer of one A record with the Corefile's TTL (30 s).
func aReply(name, ip string) reply {
	return reply{dns.RcodeSuccess, name + "\t30\tIN\tA\t" + ip}
}

var noSuchName = reply{rcode: dns.RcodeNameError}

// newComponentProbes makes the objects the probes ask for, deleted when
// the test ends: a service in a namespace labelled
// dns.schemadns.io/hidden=true, and a ClusterSetIP ServiceImport.
func newComponentProbes(t *testing.T) []componentProbe {
	t.Helper()
	e := newMcEnv(t)
	ns, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "deploy-hidden-", Labels: map[string]string{"dns.schemadns.io/hidden": "true"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.emptyNamespace(ns.Name) })
	hidden := svcName("web", ns.Name, clusterZone)
	hiddenIP := createClusterIPService(t, ns.Name, "web")

	imports := e.namespace("deploy")
	e.createImport(imports, mcClusterSetIP("db", []string{"10.247.50.10"}, mcPort("http", corev1.ProtocolTCP, 80)))
	imported := mcSvc("db", imports)

	// An address no pod has (TEST-NET-1).
	pod := "192-0-2-77.default.pod." + clusterZone
	return []componentProbe{
		{"pods-verified", pod, noSuchName, aReply(pod, "192.0.2.77")},
		{"namespace-labels", hidden, noSuchName, aReply(hidden, hiddenIP)},
		// Without multicluster the name goes upstream; the stub knows it not.
		{"multicluster", imported, aReply(imported, "10.247.50.10"), noSuchName},
	}
}

// checkProbesCover: each component that changes the cluster DNS (its
// config or its ClusterRole) alone has a probe, and each probe names a
// component.
func checkProbesCover(t *testing.T, probes []componentProbe) {
	t.Helper()
	base := clusterDNSOf(t, combo{}).key()
	for _, c := range singles() {
		probed := slices.ContainsFunc(probes, func(p componentProbe) bool { return p.component == c[0] })
		if changes := clusterDNSOf(t, c).key() != base; changes && !probed {
			t.Errorf("component %s changes the cluster DNS and has no probe in newComponentProbes", c)
		}
	}
	for _, p := range probes {
		if !slices.Contains(deployComponents, p.component) {
			t.Errorf("probe %s is for component %s, which is not in deployComponents", p.name, p.component)
		}
	}
}
