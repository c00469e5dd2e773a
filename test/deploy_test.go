package test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
//
// The tests are in four files: rendering and the dry run and wiring of the
// manifests (this one), least privilege and credentials
// (deploy_rbac_test.go), the node-local cache (deploy_nodelocal_test.go),
// and the binary run from a tree's Corefile (deploy_process_test.go).

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

// TestDeployWiring checks what a dry run cannot: that every tree runs the
// same pinned image, that the probes and ports of the Deployment and the
// DaemonSet point where their Corefiles listen, and that what RBAC grants
// by name exists.
func TestDeployWiring(t *testing.T) {
	base := renderDeploy(t, "base")
	want := containerImage(t, base.find(t, "Deployment", "coredns"))
	if !strings.HasPrefix(want, "schemadns/coredns:") {
		t.Fatalf("the base runs %q, want schemadns/coredns with a tag", want)
	}
	for _, tree := range deployTrees {
		r := renderDeploy(t, tree)
		checkResourceNames(t, tree, r)
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
