package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// Kubectl runs kubectl with the admin kubeconfig; stdin may be nil.
func (n *Node) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.kubectl, append([]string{"--kubeconfig", n.api.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// ApplyManifest applies YAML after replacing each placeholder.
func (n *Node) ApplyManifest(ctx context.Context, yaml []byte, replace map[string]string) error {
	s := string(yaml)
	for k, v := range replace {
		s = strings.ReplaceAll(s, k, v)
	}
	_, err := n.Kubectl(ctx, []byte(s), "apply", "-f", "-")
	return err
}

// Exec runs a command in a pod's first container and returns its stdout.
func (n *Node) Exec(ctx context.Context, ns, pod string, cmd ...string) (string, error) {
	return n.Kubectl(ctx, nil, append([]string{"-n", ns, "exec", pod, "--"}, cmd...)...)
}

// Client is the admin client of the API server.
func (n *Node) Client() kubernetes.Interface { return n.api.Client() }

// WaitRollout waits until the Deployment has rolled out its latest
// template: every replica updated, available, and no old pod left.
func (n *Node) WaitRollout(ctx context.Context, ns, name string, timeout time.Duration) error {
	return WaitFor(ctx, timeout, "rollout of "+ns+"/"+name, func() error { return n.RolloutDone(ctx, ns, name) })
}

// RolloutDone tells whether the Deployment has rolled out, with the
// reason when not.
func (n *Node) RolloutDone(ctx context.Context, ns, name string) error {
	d, err := n.Client().AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := rolledOut(d); err != nil {
		return err
	}
	// Old pods that are terminating still count as replicas until gone.
	pods, err := n.PodsOf(ctx, ns, d.Spec.Selector.MatchLabels)
	if err != nil {
		return err
	}
	if len(pods) != int(*d.Spec.Replicas) {
		return fmt.Errorf("%d pods, want %d", len(pods), *d.Spec.Replicas)
	}
	return nil
}

// rolledOut is kubectl rollout status's test.
func rolledOut(d *appsv1.Deployment) error {
	want := *d.Spec.Replicas
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		return fmt.Errorf("generation %d not observed yet", d.Generation)
	case d.Status.UpdatedReplicas < want:
		return fmt.Errorf("%d of %d replicas updated", d.Status.UpdatedReplicas, want)
	case d.Status.Replicas > d.Status.UpdatedReplicas:
		return fmt.Errorf("%d old replicas pending termination", d.Status.Replicas-d.Status.UpdatedReplicas)
	case d.Status.AvailableReplicas < d.Status.UpdatedReplicas:
		return fmt.Errorf("%d of %d updated replicas available", d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
	}
	return nil
}

// PodsOf lists the pods with the labels, terminating ones included.
func (n *Node) PodsOf(ctx context.Context, ns string, labels map[string]string) ([]corev1.Pod, error) {
	var sel []string
	for k, v := range labels {
		sel = append(sel, k+"="+v)
	}
	list, err := n.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: strings.Join(sel, ",")})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// WaitPodsReady waits until each named pod is Running and Ready.
func (n *Node) WaitPodsReady(ctx context.Context, ns string, names ...string) error {
	for _, name := range names {
		err := WaitFor(ctx, 3*time.Minute, "pod "+ns+"/"+name+" Ready", func() error {
			p, err := n.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !PodReady(p) {
				return fmt.Errorf("phase %s", p.Status.Phase)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// PodReady tells whether the pod is Ready.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Logs returns a pod's container log as kubelet stored it (the API server
// reaches kubelet for it).
func (n *Node) Logs(ctx context.Context, ns, pod string) (string, error) {
	b, err := n.Client().CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s: %w", ns, pod, err)
	}
	return string(b), nil
}

// importImage loads an image tarball into containerd's k8s.io namespace.
func (n *Node) importImage(ctx context.Context, tar string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.sock, "-n", "k8s.io", "images", "import", tar).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", tar, err, out)
	}
	return nil
}

// Overlay writes a kustomization in the state directory that takes a
// deploy/ tree as it is and changes only what this cluster needs: the
// image tag, the kube-dns address inside the namespace's Service range, and
// extra patches; it returns the directory for kubectl apply -k.
func Overlay(name, tree, tag string, extra string) (string, error) {
	root, err := kubeapi.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := path("overlays", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	rel, err := filepath.Rel(dir, filepath.Join(root, "deploy", tree))
	if err != nil {
		return "", err
	}
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: schemadns/coredns
    newTag: %q
patches:
  - target: {kind: Service, name: kube-dns}
    patch: |-
      - op: replace
        path: /spec/clusterIP
        value: %s
%s`, rel, tag, DNSVIP, extra)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}
