package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/schemadns/schemadns/test/kubeapi"
)

// apiServerFlags cut the API server's cost per write, so that the churn
// can reach its rate on two cores: no admission plugins a write of ours
// does not need (webhooks and policies are looked up on every write), no
// priority-and-fairness queueing and inflight limits high enough that the
// writers are never turned away. The watch cache stays on (the default), as
// in a cluster. ServiceAccount stays off, as test/kubeapi has it.
var apiServerFlags = []string{
	"--disable-admission-plugins=ServiceAccount,ResourceQuota,LimitRanger,PodSecurity,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,MutatingAdmissionPolicy,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,RuntimeClass,DefaultIngressClass,TaintNodesByCondition",
	"--enable-priority-and-fairness=false",
	"--max-requests-inflight=4000",
	"--max-mutating-requests-inflight=2000",
}

// startCluster starts etcd and kube-apiserver in work/kubeapi.
func startCluster(ctx context.Context, work string) (*kubeapi.Cluster, error) {
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

// proxiedKubeconfig writes a copy of the cluster's kubeconfig whose server
// is the fault proxy: the servers under test reach the API server only
// through it. The serving certificate is for 127.0.0.1, which the proxy's
// address is too, so TLS goes through untouched.
func proxiedKubeconfig(c *kubeapi.Cluster, proxyAddr, path string) error {
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

// etcdHeader is the header of etcd's v3 gateway answers; int64s come as
// strings.
type etcdHeader struct {
	Header struct {
		Revision string `json:"revision"`
	} `json:"header"`
}

// compactEtcd compacts etcd to its current revision through its v3 HTTP
// gateway and returns that revision: every watch from an older resource
// version then ends in 410 Gone. Two writes of a key outside the API
// server's prefix come first: a watch resumes from the revision after the
// last one it saw, which compacting to the current revision alone would
// keep for an informer that had seen the very last write.
func compactEtcd(ctx context.Context, etcdURL string) (int64, error) {
	var h etcdHeader
	for range 2 {
		// "soak-bump", base64: the gateway takes bytes as base64.
		put := map[string]any{"key": "c29hay1idW1w", "value": "MQ=="}
		if err := etcdPost(ctx, etcdURL+"/v3/kv/put", put, &h); err != nil {
			return 0, err
		}
	}
	rev, err := strconv.ParseInt(h.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd revision %q: %w", h.Header.Revision, err)
	}
	body := map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}
	if err := etcdPost(ctx, etcdURL+"/v3/kv/compaction", body, &h); err != nil {
		return 0, err
	}
	return rev, nil
}

func etcdPost(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode %s: %w", url, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("request %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("post %s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("post %s: %s: %s", url, resp.Status, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode %s: %w", url, err)
	}
	return nil
}
