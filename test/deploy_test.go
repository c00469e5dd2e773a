package test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The deploy/ manifests, proven against the real API server: the base
// with every combination of the components of deploy/components is
// accepted by a server-side dry run and composes (deploy_components_test.go);
// the ClusterRole is exactly what the Corefile needs (the binary syncs with
// a token of the ServiceAccount, and names the missing permission when any
// one rule is taken away); and the node-local cache's Corefile in front of
// the cluster DNS's resolves the example Pod's short names through
// gensearchpath and edns0autopath.
//
// The tests are in five files: rendering and the dry run and wiring of the
// manifests (this one), how the components combine
// (deploy_components_test.go), least privilege and credentials
// (deploy_rbac_test.go), the node-local cache (deploy_nodelocal_test.go),
// and the binary run from a rendered config (deploy_process_test.go).

// rendered is one kustomization rendered by `kubectl kustomize`.
type rendered struct {
	yaml    []byte
	objects []*unstructured.Unstructured
}

// renders holds each kustomization rendered in this run, by name
// (every test renders the same ones; the objects are only read).
var renders struct {
	sync.Mutex
	m map[string]rendered
}

// renderDeploy renders deploy/<tree> (the base or an overlay).
func renderDeploy(t *testing.T, tree string) rendered {
	t.Helper()
	return renderDir(t, "deploy/"+tree, func() string { return filepath.Join("..", "deploy", tree) })
}

// renderDir renders the kustomization named what, in the directory dir
// returns, with the kubectl of the tools cache; once per run.
func renderDir(t *testing.T, what string, dir func() string) rendered {
	t.Helper()
	renders.Lock()
	defer renders.Unlock()
	if r, ok := renders.m[what]; ok {
		return r
	}
	kubectl := kubectlPath(t)
	out, err := exec.Command(kubectl, "kustomize", dir()).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", what, err, stderrOf(err))
	}
	r := rendered{yaml: out}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: decode: %v", what, err)
		}
		if obj != nil {
			r.objects = append(r.objects, &unstructured.Unstructured{Object: obj})
		}
	}
	if renders.m == nil {
		renders.m = map[string]rendered{}
	}
	renders.m[what] = r
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

// configOf is what workload kind/name mounts from the ConfigMap of its
// "config" volume, file name to content: found through the volume, so the
// test follows the hashed ConfigMap name and the keys the way the kubelet
// does.
func (r rendered) configOf(t *testing.T, kind, name string) config {
	t.Helper()
	var src *corev1.ConfigMapVolumeSource
	for _, v := range podTemplate(t, r.find(t, kind, name)).Spec.Volumes {
		if v.Name == "config" {
			src = v.ConfigMap
		}
	}
	if src == nil {
		t.Fatalf("%s %s mounts no ConfigMap as volume config", kind, name)
	}
	cm := typed[corev1.ConfigMap](t, r.find(t, "ConfigMap", src.Name))
	files := config{}
	if len(src.Items) == 0 {
		maps.Copy(files, cm.Data)
	}
	for _, item := range src.Items {
		files[item.Path] = cm.Data[item.Key]
	}
	if _, ok := files["Corefile"]; !ok {
		t.Fatalf("%s %s mounts no Corefile from ConfigMap %s", kind, name, src.Name)
	}
	return files
}

// podTemplate is the pod template of workload w; empty for an object
// that has none.
func podTemplate(t *testing.T, w *unstructured.Unstructured) *corev1.PodTemplateSpec {
	t.Helper()
	tmpl, _, _ := unstructured.NestedMap(w.Object, "spec", "template")
	if tmpl == nil {
		return &corev1.PodTemplateSpec{}
	}
	return typed[corev1.PodTemplateSpec](t, &unstructured.Unstructured{Object: tmpl})
}

// examplePod is the node-local component's example Pod, which the
// component does not apply.
func examplePod(t *testing.T) ([]byte, *corev1.Pod) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "components", "node-local", "example-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&obj); err != nil {
		t.Fatalf("example-pod.yaml: %v", err)
	}
	return data, typed[corev1.Pod](t, &unstructured.Unstructured{Object: obj})
}

// TestDeployDryRun: the API server accepts every object of the base with
// each combination of components (allCombos; the overlays render the same
// as their component, TestDeployComponentsCompose), and the example Pod,
// validated and admitted as for real (`kubectl apply --dry-run=server`).
func TestDeployDryRun(t *testing.T) {
	c := kubeapi.Shared(t)
	kubectl := kubectlPath(t)
	installMonitoringCRDs(t, c) // the monitoring component's kinds
	podYAML, _ := examplePod(t)
	type manifests struct {
		name    string
		yaml    []byte
		objects int
	}
	all := []manifests{{"example-pod.yaml", podYAML, 1}}
	for _, cb := range allCombos() {
		r := renderCombo(t, cb)
		all = append(all, manifests{cb.String(), r.yaml, len(r.objects)})
	}
	for _, m := range all {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "apply", "--dry-run=server", "-f", "-")
			cmd.Stdin = bytes.NewReader(m.yaml)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server %s: %v\n%s", m.name, err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != m.objects {
				t.Errorf("%d objects rendered, %d applied:\n%s", m.objects, len(lines), out)
			}
			for _, l := range lines {
				if !strings.HasSuffix(l, "(server dry run)") {
					t.Errorf("unexpected output line %q", l)
				}
			}
		})
	}
}

// TestDeployWiring checks what a dry run cannot, in every combination of
// components: that every workload runs the base's pinned image, that the
// probes and ports of the Deployment and the DaemonSet point where their
// Corefiles listen, and that what RBAC grants by name exists.
func TestDeployWiring(t *testing.T) {
	base := renderCombo(t, combo{})
	want := containerImage(t, base.find(t, "Deployment", "coredns"))
	if !strings.HasPrefix(want, "schemadns/coredns:") {
		t.Fatalf("the base runs %q, want schemadns/coredns with a tag", want)
	}
	for _, c := range allCombos() {
		r := renderCombo(t, c)
		checkResourceNames(t, c.String(), r)
		for _, o := range r.objects {
			if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
				continue
			}
			if got := containerImage(t, o); strings.HasPrefix(got, "schemadns/coredns") && got != want {
				t.Errorf("%s: %s %s runs %q, the base %q", c, o.GetKind(), o.GetName(), got, want)
			}
		}

		checkWiring(t, c.String(), r.find(t, "Deployment", "coredns"), r.configOf(t, "Deployment", "coredns")["Corefile"], wiring{
			ready: "8181", health: "8080", metrics: "9153",
			corefile: []string{"\n    ready\n", "\n    health {\n", "\n    prometheus :9153\n", ".:53 {"},
		})
		if c.has("node-local") {
			checkWiring(t, c.String(), r.find(t, "DaemonSet", "node-local-dns"), r.configOf(t, "DaemonSet", "node-local-dns")["Corefile"], wiring{
				ready: "8181", health: "8080", metrics: "9253", host: "169.254.20.10", surge: true, selfReady: "/run/coredns/ready.sock",
				corefile: []string{"ready 169.254.20.10:8181\n", "health 169.254.20.10:8080 {\n", "prometheus :9253\n", "bind 169.254.20.10\n"},
			})
		}
	}
}

// wiring is where a workload's probes and ports must point, and the
// Corefile lines that listen there. surge: a host-network DaemonSet that
// updates by starting the new pod beside the old one, so it declares no
// ports (host ports, which would keep the new pod off the node) and names
// its metrics port in the prometheus.io/port annotation.
type wiring struct {
	ready, health, metrics, host string
	surge                        bool
	// selfReady: the readiness probe is handover's exec probe of this
	// socket.
	selfReady string
	corefile  []string
}

func checkWiring(t *testing.T, what string, w *unstructured.Unstructured, corefile string, want wiring) {
	t.Helper()
	for _, line := range want.corefile {
		if !strings.Contains(corefile, line) {
			t.Errorf("%s: the Corefile of %s has no %q", what, w.GetName(), line)
		}
	}
	c := firstContainer(t, w)
	probe := func(what string, p *corev1.Probe, path, port string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != port || p.HTTPGet.Host != want.host {
			t.Errorf("%s: %s %s probe %+v, want GET %s:%s%s", what, w.GetName(), what, p, want.host, port, path)
		}
	}
	if want.selfReady != "" {
		// Asked of the container's own process (handover's self_ready):
		// on the host network an HTTP probe may reach the other pod.
		if p := c.ReadinessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, []string{"/coredns", "-handover-probe", want.selfReady}) ||
			!strings.Contains(corefile, "self_ready "+want.selfReady+" "+want.host+":"+want.ready+"\n") {
			t.Errorf("%s: %s readiness probe %+v, want exec /coredns -handover-probe %s, served by self_ready for %s:%s", what, w.GetName(), p, want.selfReady, want.host, want.ready)
		}
	} else {
		probe("readiness", c.ReadinessProbe, "/ready", want.ready)
	}
	probe("liveness", c.LivenessProbe, "/health", want.health)
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)] = true
	}
	if want.surge {
		checkSurge(t, what, w, want.metrics)
	} else {
		for _, p := range []string{"53/UDP", "53/TCP", want.metrics + "/TCP"} {
			if !ports[p] {
				t.Errorf("%s: %s declares no port %s (has %v)", what, w.GetName(), p, ports)
			}
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.Capabilities == nil ||
		!slices.Contains(sc.Capabilities.Add, "NET_BIND_SERVICE") || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: %s security context %+v, want non-root with only NET_BIND_SERVICE (the image's file capability)", what, w.GetName(), sc)
	}
}

// checkSurge checks a DaemonSet that surges: maxSurge above 0 and
// maxUnavailable 0, no declared ports, the metrics port annotated.
func checkSurge(t *testing.T, what string, w *unstructured.Unstructured, metrics string) {
	t.Helper()
	var ds appsv1.DaemonSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(w.Object, &ds); err != nil {
		t.Fatalf("%s: %s: %v", what, w.GetName(), err)
	}
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxSurge == nil || ru.MaxUnavailable == nil || ru.MaxSurge.String() == "0" || ru.MaxUnavailable.String() != "0" {
		t.Errorf("%s: %s updates with %+v, want maxSurge above 0 and maxUnavailable 0", what, w.GetName(), ds.Spec.UpdateStrategy)
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if len(c.Ports) > 0 {
			t.Errorf("%s: %s container %s declares ports %v: on the host network they are host ports, and the new pod of an update would not fit beside the old", what, w.GetName(), c.Name, c.Ports)
		}
	}
	if got := ds.Spec.Template.Annotations["prometheus.io/port"]; got != metrics {
		t.Errorf("%s: %s prometheus.io/port %q, want %s", what, w.GetName(), got, metrics)
	}
}

func firstContainer(t *testing.T, w *unstructured.Unstructured) corev1.Container {
	t.Helper()
	pt := podTemplate(t, w)
	if len(pt.Spec.Containers) == 0 {
		t.Fatalf("%s %s has no containers", w.GetKind(), w.GetName())
	}
	return pt.Spec.Containers[0]
}

func containerImage(t *testing.T, w *unstructured.Unstructured) string {
	t.Helper()
	return firstContainer(t, w).Image
}
