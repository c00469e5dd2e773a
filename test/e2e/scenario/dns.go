package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/schemadns/schemadns/internal/kubeapi"
	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
)

// OursNodeLocal is deploy/components/node-local's DaemonSet.
const OursNodeLocal = "node-local-dns"

// InstallStock installs kubeadm's CoreDNS as the cluster DNS.
func (e *Env) InstallStock(ctx context.Context) error {
	if err := e.Cluster.ApplyManifest(ctx, manifests.StockCoreDNS, e.Placeholders()); err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	if err := e.Cluster.WaitRollout(ctx, DNSNamespace, DNSDeploy, 3*time.Minute); err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	return nil
}

// StartWorkloads creates what the clients resolve and the client pods.
func (e *Env) StartWorkloads(ctx context.Context) error {
	if err := e.Cluster.ApplyManifest(ctx, manifests.Workloads, e.Placeholders()); err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	if err := e.Cluster.WaitPodsReady(ctx, AppNS, "glibc", "glibc-tcp", "musl", "tools", "db-0", "db-1"); err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	if err := e.Cluster.WaitRollout(ctx, AppNS, "web", 2*time.Minute); err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	return nil
}

// DNSPods lists the cluster DNS Deployment's running pods.
func (e *Env) DNSPods(ctx context.Context) ([]corev1.Pod, error) {
	return e.Cluster.RunningPods(ctx, DNSNamespace, "kube-dns")
}

// ApplyNodeLocal applies the node-local overlay, its Corefile pointed at
// this cluster's kube-dns, and waits until its DaemonSet is ready.
func (e *Env) ApplyNodeLocal(ctx context.Context) error {
	root, err := kubeapi.RepoRoot()
	if err != nil {
		return err
	}
	corefile, err := os.ReadFile(filepath.Join(root, "deploy", "components", "node-local", "Corefile"))
	if err != nil {
		return err
	}
	// The one change an operator whose kube-dns is elsewhere makes.
	corefile = []byte(strings.ReplaceAll(string(corefile), "10.96.0.10", cluster.DNSVIP))
	dir, err := cluster.Overlay("node-local", "overlays/node-local", e.OurTag, `configMapGenerator:
  - name: node-local-dns
    namespace: kube-system
    behavior: replace
    files:
      - Corefile
`)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Corefile"), corefile, 0o644); err != nil {
		return err
	}
	if _, err := e.Cluster.Kubectl(ctx, nil, "apply", "-k", dir); err != nil {
		return err
	}
	return e.Cluster.WaitDaemonSetReady(ctx, DNSNamespace, OursNodeLocal)
}
