package kubeapi

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/schemadns/schemadns/internal/childproc"
)

// startEtcd starts a single-member etcd on loopback and returns its client
// URL once it reports healthy.
func (c *Cluster) startEtcd(ctx context.Context, bin string) (string, error) {
	ports, err := childproc.FreePorts(2)
	if err != nil {
		return "", err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	args := []string{
		"--name=default",
		"--data-dir=" + filepath.Join(c.WorkDir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		// Test data need not survive a power cut; fsync dominates write
		// latency on a busy disk.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
	c.mu.Lock()
	c.etcd, err = childproc.Start("etcd", bin, args, c.log)
	c.mu.Unlock()
	if err != nil {
		return "", err
	}
	return clientURL, c.waitEtcd(ctx, clientURL)
}

// waitEtcd polls etcd's /health until it is healthy, etcd exits or the
// deadline passes.
func (c *Cluster) waitEtcd(ctx context.Context, clientURL string) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no answer yet"
	for {
		if err := c.etcd.Exited(); err != nil {
			return fmt.Errorf("%w; last lines of its log:\n%s", err, c.etcd.Tail())
		}
		body, err := get(ctx, client, clientURL+"/health")
		if err == nil && strings.Contains(body, `"health":"true"`) {
			return nil
		}
		last = describe(body, err)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("etcd not healthy (%s): %w; last lines of its log:\n%s", last, err, c.etcd.Tail())
		}
	}
}
