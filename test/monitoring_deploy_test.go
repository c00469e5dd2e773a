package test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// monitoringCRDs are the CustomResourceDefinitions of the Prometheus
// Operator's PodMonitor and PrometheusRule, for the dry run (see the
// header of each file for where they come from).
var monitoringCRDs = filepath.Join("testdata", "monitoring-crds")

// TestMonitoringComponent renders deploy/overlays/monitoring, the base with
// the monitoring component, and checks what it adds: the base's objects
// are left exactly as they are; a PodMonitor, the PrometheusRule and the
// dashboard ConfigMap are added in the base's namespace; the PodMonitor
// selects the Deployment's pods and scrapes the port where its Corefile's
// prometheus listens, with the job name the dashboard selects by default;
// the ConfigMap holds dashboard.json as it is, with the label of Grafana's
// dashboard sidecar. Then the API server, with the Operator's CRDs
// installed, accepts every object (kubectl apply --dry-run=server, field
// validation strict: a field the CRD's schema does not have is an error).
func TestMonitoringComponent(t *testing.T) {
	base := renderDeploy(t, "base")
	r := renderDeploy(t, "overlays/monitoring")
	baseKeys := map[string]bool{}
	for _, b := range base.objects {
		baseKeys[objectKey(b)] = true
		if got := r.find(t, b.GetKind(), b.GetName()); !reflect.DeepEqual(got.Object, b.Object) {
			t.Errorf("the component changes %s", objectKey(b))
		}
	}
	var added []string
	for _, o := range r.objects {
		if baseKeys[objectKey(o)] {
			continue
		}
		added = append(added, objectKey(o))
		if o.GetNamespace() != "kube-system" || o.GetLabels()["app.kubernetes.io/part-of"] != "schemadns" {
			t.Errorf("%s: namespace %q, labels %v; want kube-system, part-of schemadns as the base's", objectKey(o), o.GetNamespace(), o.GetLabels())
		}
	}
	slices.Sort(added)
	if want := []string{"ConfigMap/schemadns-dashboard", "PodMonitor/coredns", "PodMonitor/node-local-dns", "PrometheusRule/schemadns"}; !slices.Equal(added, want) {
		t.Errorf("the component adds %v, want %v", added, want)
	}

	checkPodMonitor(t, r)
	checkNodeLocalPodMonitor(t, r)

	cm := typed[corev1.ConfigMap](t, r.find(t, "ConfigMap", "schemadns-dashboard"))
	dash, _ := readDashboard(t)
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard ConfigMap's labels are %v, want grafana_dashboard: \"1\"", cm.Labels)
	}
	if len(cm.Data) != 1 || cm.Data["schemadns.json"] != string(dash) {
		t.Errorf("the dashboard ConfigMap holds %d keys, schemadns.json equal to dashboard.json: %v", len(cm.Data), cm.Data["schemadns.json"] == string(dash))
	}

	rule := r.find(t, "PrometheusRule", "schemadns")
	spec, _, _ := unstructured.NestedMap(rule.Object, "spec")
	var src map[string]any
	if err := yaml.Unmarshal(readPrometheusRule(t).spec, &src); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spec, src) {
		t.Errorf("the rendered PrometheusRule's spec differs from prometheusrule.yaml's")
	}

	dryRunWithCRDs(t, r)
}

// checkPodMonitor: the PodMonitor selects the pods of the Deployment and
// scrapes, on each, a named port of its container that is where the
// Corefile's prometheus listens; its job label comes from a pod label
// whose value is the job the dashboard selects by default.
func checkPodMonitor(t *testing.T, r rendered) {
	t.Helper()
	pm := r.find(t, "PodMonitor", "coredns")
	deploy := typed[appsv1.Deployment](t, r.find(t, "Deployment", "coredns"))
	podLabels := deploy.Spec.Template.Labels
	selector, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if len(selector) == 0 {
		t.Fatalf("the PodMonitor selects pods by %v", selector)
	}
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("the PodMonitor selects %s=%s, the Deployment's pods have %v", k, v, podLabels)
		}
	}
	jobLabel, _, _ := unstructured.NestedString(pm.Object, "spec", "jobLabel")
	if job := podLabels[jobLabel]; job != dashboardVariables["$job"] {
		t.Errorf("the PodMonitor's job is the pod label %q (%q), the dashboard's default job %q", jobLabel, job, dashboardVariables["$job"])
	}
	corefile := r.configOf(t, "Deployment", "coredns")["Corefile"]
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(endpoints) == 0 {
		t.Fatal("the PodMonitor has no podMetricsEndpoints")
	}
	for _, ep := range endpoints {
		name, _, _ := unstructured.NestedString(ep.(map[string]any), "port")
		var port *corev1.ContainerPort
		for i, p := range deploy.Spec.Template.Spec.Containers[0].Ports {
			if p.Name == name {
				port = &deploy.Spec.Template.Spec.Containers[0].Ports[i]
			}
		}
		if port == nil {
			t.Errorf("the PodMonitor scrapes port %q, which the Deployment's container does not name", name)
			continue
		}
		if listen := fmt.Sprintf("\n    prometheus :%d\n", port.ContainerPort); port.Protocol != corev1.ProtocolTCP || !strings.Contains(corefile, listen) {
			t.Errorf("the PodMonitor scrapes port %q (%d/%s); the Corefile has no %q", name, port.ContainerPort, port.Protocol, strings.TrimSpace(listen))
		}
	}
}

// dryRunWithCRDs installs the Operator's CRDs in the shared API server
// (removed when the test ends) and dry-runs every object of r there.
func dryRunWithCRDs(t *testing.T, r rendered) {
	t.Helper()
	c := kubeapi.Shared(t)
	kubectl := kubectlPath(t)
	installMonitoringCRDs(t, c)
	cmd := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
	cmd.Stdin = bytes.NewReader(r.yaml)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, outb)
	}
	out := string(outb)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(r.objects) {
		t.Errorf("%d objects rendered, %d applied:\n%s", len(r.objects), len(lines), out)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, "(server dry run)") {
			t.Errorf("unexpected output line %q", l)
		}
	}
}

// installMonitoringCRDs installs the Prometheus Operator's CRDs of
// testdata/monitoring-crds (PodMonitor, PrometheusRule) in c until the
// test ends.
func installMonitoringCRDs(t *testing.T, c *kubeapi.Cluster) {
	t.Helper()
	kubectl := kubectlPath(t)
	kc := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	files, err := filepath.Glob(filepath.Join(monitoringCRDs, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", monitoringCRDs, err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		names = append(names, "crd/"+(&unstructured.Unstructured{Object: crd}).GetName())
	}
	t.Cleanup(func() {
		args := append([]string{"--kubeconfig", c.Kubeconfig, "delete", "--ignore-not-found"}, names...)
		if out, err := exec.Command(kubectl, args...).CombinedOutput(); err != nil {
			t.Logf("delete the monitoring CRDs: %v\n%s", err, out)
		}
	})
	kc(nil, "apply", "--server-side", "-f", monitoringCRDs)
	kc(nil, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, names...)...)
}

func objectKey(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// checkNodeLocalPodMonitor: the node-local cache's PodMonitor selects the
// node-local DaemonSet's pods and scrapes its node-cache container at the
// port of the pods' prometheus.io/port annotation, which the node-local
// Corefile's prometheus listens on (the pods declare no ports).
func checkNodeLocalPodMonitor(t *testing.T, r rendered) {
	t.Helper()
	nl := renderDeploy(t, "overlays/node-local")
	ds := typed[appsv1.DaemonSet](t, nl.find(t, "DaemonSet", "node-local-dns"))
	pm := r.find(t, "PodMonitor", "node-local-dns")
	selector, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("the node-local PodMonitor selects %s=%s, the DaemonSet's pods have %v", k, v, ds.Spec.Template.Labels)
		}
	}
	port := ds.Spec.Template.Annotations["prometheus.io/port"]
	corefile := nl.configOf(t, "DaemonSet", "node-local-dns")["Corefile"]
	if !strings.Contains(corefile, "prometheus :"+port+"\n") {
		t.Errorf("the node-local pods annotate port %q; their Corefile's prometheus listens elsewhere", port)
	}
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(endpoints) != 1 {
		t.Fatalf("the node-local PodMonitor has %d endpoints, want 1", len(endpoints))
	}
	relabel, _, _ := unstructured.NestedSlice(endpoints[0].(map[string]any), "relabelings")
	var keep, address bool
	for _, rl := range relabel {
		m := rl.(map[string]any)
		keep = keep || (m["action"] == "keep" && m["regex"] == ds.Spec.Template.Spec.Containers[0].Name)
		address = address || (m["targetLabel"] == "__address__" && m["replacement"] == "${1}:"+port)
	}
	if !keep || !address {
		t.Errorf("the node-local PodMonitor's relabelings %v: want the %s container kept (%v) and the address set to the pod's on %s (%v)",
			relabel, ds.Spec.Template.Spec.Containers[0].Name, keep, port, address)
	}
}
