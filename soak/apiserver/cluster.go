// Package apiserver starts the soak's etcd and kube-apiserver, with flags
// that let two cores take the churn's writes, and the TCP proxy in front of
// it through which the servers under test reach it, which the faults use
// to reset or stall their connections.
package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// apiServerFlags cut the API server's cost per write, so that the churn
// can reach its rate on two cores: no admission plugins a write of ours
// does not need (webhooks and policies are looked up on every write), no
// priority-and-fairness queueing and inflight limits high enough that the
// writers are never turned away. The watch cache stays on (the default), as
// in a cluster. ServiceAccount stays off, as internal/kubeapi has it.
var apiServerFlags = []string{
	"--disable-admission-plugins=" + strings.Join([]string{"ServiceAccount", "ResourceQuota", "LimitRanger", "PodSecurity",
		"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy",
		"Priority", "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection",
		"PersistentVolumeClaimResize", "RuntimeClass", "DefaultIngressClass", "TaintNodesByCondition"}, ","),
	"--enable-priority-and-fairness=false",
	"--max-requests-inflight=4000",
	"--max-mutating-requests-inflight=2000",
}

// Start starts etcd and kube-apiserver in work/kubeapi.
func Start(ctx context.Context, work string) (*kubeapi.Cluster, error) {
	c, err := kubeapi.Start(ctx, kubeapi.Options{
		WorkDir:        filepath.Join(work, "kubeapi"),
		APIServerFlags: apiServerFlags,
		ReadyTimeout:   3 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("start etcd and kube-apiserver: %w", err)
	}
	return c, nil
}

// ProxiedKubeconfig writes a copy of the cluster's kubeconfig whose server
// is the fault proxy: the servers under test reach the API server only
// through it. The serving certificate is for 127.0.0.1, which the proxy's
// address is too, so TLS goes through untouched.
func ProxiedKubeconfig(c *kubeapi.Cluster, proxyAddr, path string) error {
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("read kubeconfig: %w", err)
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + proxyAddr
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
