package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/schemadns/schemadns/internal/childproc"
	"github.com/schemadns/schemadns/internal/toolflags"
)

// errStopped means the cluster was stopped for good by Stop.
var errStopped = errors.New("kubeapi: cluster is stopped")

// Cluster-wide settings that tests rely on.
const (
	// ServiceCIDRs are the Service IP ranges, IPv4 first, so that
	// dual-stack Services can be created.
	ServiceCIDRs = "10.96.0.0/16,fd00:10:96::/112"
	// ServiceAccountIssuer is the iss claim of ServiceAccount tokens and
	// their default audience.
	ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
)

// prepareAPIServer writes the keys and token file and fixes the command line,
// port included, that every start of kube-apiserver uses.
func (c *Cluster) prepareAPIServer(bin, etcdURL string) error {
	port, err := childproc.FreePort()
	if err != nil {
		return err
	}
	addr := c.opts.Address
	if addr == "" {
		addr = "127.0.0.1"
	}
	c.Host = "https://" + net.JoinHostPort(addr, strconv.Itoa(port))
	c.Kubeconfig = filepath.Join(c.WorkDir, "kubeconfig")
	c.adminToken = newToken()
	file := func(name string) string { return filepath.Join(c.WorkDir, name) }
	if err := writeServiceAccountKey(file("sa.key"), file("sa.pub")); err != nil {
		return err
	}
	if err := writeTokenFile(file("tokens.csv"), c.adminToken); err != nil {
		return err
	}
	c.apiArgs = append([]string{bin,
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + addr,
		"--advertise-address=" + addr,
		"--secure-port=" + strconv.Itoa(port),
		// kube-apiserver writes a self-signed serving certificate and its
		// CA here, and reuses them on restart, so clients keep trusting it.
		"--cert-dir=" + file("certs"),
		"--authorization-mode=RBAC",
		"--token-auth-file=" + file("tokens.csv"),
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + file("sa.pub"),
		"--service-account-signing-key-file=" + file("sa.key"),
		"--service-cluster-ip-range=" + ServiceCIDRs,
		"--profiling=false",
	}, c.opts.APIServerFlags...)
	if !c.opts.ServiceAccountAdmission {
		// No controller creates "default" ServiceAccounts; without this
		// every Pod creation would fail.
		c.apiArgs = append(c.apiArgs, "--disable-admission-plugins=ServiceAccount")
	}
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same
// port with the same certificates, keys and tokens, and returns once it is
// ready. Clients made before the outage reconnect by themselves. It does
// nothing if kube-apiserver is running.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errStopped
	}
	if c.apiserver != nil && c.apiserver.Exited() == nil {
		return nil
	}
	p, err := childproc.Start("kube-apiserver", c.apiArgs[0], c.apiArgs[1:], c.log)
	if err != nil {
		return err
	}
	c.apiserver = p
	return c.waitAPIServer(ctx)
}

// StopAPIServer kills kube-apiserver abruptly, like a crash, and returns once
// it is gone; etcd keeps running with all the data.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errStopped
	}
	c.apiserver.Kill()
	return nil
}

// waitAPIServer polls /readyz until it answers ok, the process exits or the
// deadline passes; errors carry the failing checks and the log's tail.
func (c *Cluster) waitAPIServer(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	var client *http.Client
	last := "no answer yet"
	for {
		if err := c.apiserver.Exited(); err != nil {
			return c.apiServerError(err, last)
		}
		var err error
		if client, err = c.readyzClient(client); err != nil {
			return err
		}
		if client != nil {
			body, err := get(ctx, client, c.Host+"/readyz")
			if err == nil && body == "ok" {
				return nil
			}
			last = describe(failedChecks(body), err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return c.apiServerError(fmt.Errorf("kube-apiserver not ready: %w", err), last)
		}
	}
}

// apiServerError adds the last /readyz answer and the log's tail to err.
func (c *Cluster) apiServerError(err error, last string) error {
	return fmt.Errorf("%w (last /readyz: %s); last lines of its log:\n%s", err, last, c.apiserver.Tail())
}

// readyzClient returns client, or makes one once the serving CA exists; nil
// means not yet. kube-apiserver writes the key after the certificate, so the
// key's presence means the certificate is complete.
func (c *Cluster) readyzClient(client *http.Client) (*http.Client, error) {
	if client != nil {
		return client, nil
	}
	certs := filepath.Join(c.WorkDir, "certs")
	if c.caData == nil {
		if !exists(filepath.Join(certs, "apiserver.key")) {
			return nil, nil
		}
		ca, err := readServingCA(filepath.Join(certs, "apiserver.crt"))
		if err != nil {
			return nil, err
		}
		c.caData = ca
	}
	client, err := rest.HTTPClientFor(c.RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("create readiness client: %w", err)
	}
	return client, nil
}

// failedChecks keeps the failing lines ("[-]...") of a /readyz answer.
func failedChecks(body string) string {
	var failed []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, line)
		}
	}
	if len(failed) == 0 {
		return body
	}
	return strings.Join(failed, "; ")
}

// get fetches url and returns its body; a status other than 200 is an error.
func get(ctx context.Context, client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}

// describe summarises a poll's outcome for an error message.
func describe(body string, err error) string {
	if err != nil {
		return strings.TrimSpace(err.Error() + " " + body)
	}
	return body
}

// sleep waits d or until ctx ends, whose error it returns.
var sleep = toolflags.SleepCtx
