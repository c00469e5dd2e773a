// Package kubeapi runs a real etcd and kube-apiserver on loopback, for
// integration tests and for local runs (test/localapi, `make run`).
//
// It is a real API server, not a fake: RBAC, ServiceAccount tokens
// (TokenRequest), dual-stack Service IP allocation and CRDs behave as in a
// cluster. The MCS CRDs (ServiceImport, ServiceExport) are installed, the
// ServiceImport one serving the versions Options.ServiceImportVersions
// asks for; with Options.ClusterProperties, KEP-2149's ClusterProperty too. No
// controllers run (there is no kube-controller-manager), so nothing creates
// EndpointSlices for Services, no namespace finishes deleting and no
// namespace gets a "default" ServiceAccount; tests create what they need. The
// ServiceAccount admission plugin is off so Pods can be created without one.
//
// The binaries come from hack/tools.sh, which Start runs when they are
// missing (the first build of kube-apiserver takes several minutes).
//
// One test package starts ONE cluster, in TestMain, and shares it:
//
//	func TestMain(m *testing.M) { kubeapi.ForTest(m, kubeapi.Options{}) }
//
//	func TestSomething(t *testing.T) {
//		c := kubeapi.Shared(t)
//		_, err := c.Client().CoreV1().Namespaces().Create(...)
//	}
//
// Tests that share the cluster should each use their own namespace. With
// -short, ForTest starts nothing and Shared skips the test.
package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/schemadns/schemadns/internal/childproc"
)

// Options configure Start. The zero value is ready to use.
type Options struct {
	// ToolsDir holds the binaries built by hack/tools.sh. Default:
	// $SCHEMADNS_TOOLS_DIR, else $XDG_CACHE_HOME/schemadns/tools, else
	// ~/.cache/schemadns/tools (the same rule as hack/tools.sh).
	ToolsDir string
	// EtcdBinary and APIServerBinary override the binaries found in
	// ToolsDir, for running outside the repository.
	EtcdBinary, APIServerBinary string
	// WorkDir holds certificates, keys, etcd's data, the kubeconfigs and the
	// default log. Default: a fresh temporary directory, removed by Stop.
	// A WorkDir given here is kept.
	WorkDir string
	// Log receives both processes' output, each line prefixed with the
	// process name. Default: the file kubeapi.log in WorkDir, so that test
	// output stays readable.
	Log io.Writer
	// ReadyTimeout bounds each wait for readiness: etcd, kube-apiserver,
	// the CRDs. Default 90s, generous for a loaded 2-core machine. Building
	// missing binaries is bounded only by ctx.
	ReadyTimeout time.Duration
	// APIServerFlags are appended to the kube-apiserver command line; a
	// flag given twice takes its last value.
	APIServerFlags []string
	// ServiceImportVersions are the versions the ServiceImport CRD serves
	// ("v1alpha1", "v1beta1"); default both, as mcs-api ships it. With one,
	// that one is stored too: an MCS install older or newer than the one
	// the module's CRD comes from.
	ServiceImportVersions []string
	// ClusterProperties installs the ClusterProperty CRD (KEP-2149,
	// about.k8s.io/v1alpha1; ClusterPropertyCRD).
	ClusterProperties bool
	// Address is the IP kube-apiserver binds, advertises and serves Host
	// on; default 127.0.0.1. A cluster whose pods reach the API server
	// through the kubernetes Service (make e2e) gives a node address: the
	// self-signed serving certificate then names it and the Service's
	// first IP.
	Address string
	// ServiceAccountAdmission keeps the ServiceAccount admission plugin on,
	// as in a cluster: pods get their ServiceAccount's token mounted, and a
	// pod's ServiceAccount must exist (a kube-controller-manager makes each
	// namespace's "default"). Off by default, since no controllers run.
	ServiceAccountAdmission bool
}

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig for the admin user (group
	// system:masters), trusting the API server's own CA.
	Kubeconfig string
	// Host is the API server's URL, https://127.0.0.1:<port>.
	Host string
	// WorkDir is where the cluster keeps its files.
	WorkDir string
	// LogPath is the log file when Options.Log was not given, else "".
	LogPath string
	// EtcdURL is etcd's client URL, http://127.0.0.1:<port>, for callers
	// that act on etcd itself (the soak compacts it to force relists).
	EtcdURL string

	opts       Options
	ownWorkDir bool                   // Stop removes WorkDir only if Start made it
	logFile    *os.File               // the default log, closed by Stop
	log        *childproc.Sink        // both processes write here
	apiArgs    []string               // kept so StartAPIServer restarts it identically
	adminToken string                 // in the token file; the kubeconfig carries it
	caData     []byte                 // PEM of the CA that signed the serving cert
	client     *kubernetes.Clientset  // admin; made once the CA is known
	dynamic    *dynamic.DynamicClient // admin, for the CRDs' types

	mu        sync.Mutex // guards the processes against concurrent Stop/Start
	etcd      *childproc.Process
	apiserver *childproc.Process
	stopped   bool
}

// defaultReadyTimeout is Options.ReadyTimeout's default.
const defaultReadyTimeout = 90 * time.Second

// Start starts etcd and kube-apiserver, installs the MCS CRDs and returns when
// they are served. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// newCluster resolves opts and prepares WorkDir; it starts nothing.
func newCluster(opts Options) (*Cluster, error) {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = defaultReadyTimeout
	}
	c := &Cluster{opts: opts, WorkDir: opts.WorkDir}
	if c.WorkDir == "" {
		dir, err := os.MkdirTemp("", "kubeapi-")
		if err != nil {
			return nil, fmt.Errorf("create work dir: %w", err)
		}
		c.WorkDir, c.ownWorkDir = dir, true
	} else if err := os.MkdirAll(c.WorkDir, 0o700); err != nil {
		return nil, fmt.Errorf("create work dir: %w", err)
	}
	if err := c.openLog(); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// openLog opens the default log file unless the caller gave a writer.
func (c *Cluster) openLog() error {
	w := c.opts.Log
	if w == nil {
		c.LogPath = filepath.Join(c.WorkDir, "kubeapi.log")
		f, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		c.logFile, w = f, f
	}
	c.log = childproc.NewSink(w)
	return nil
}

// start runs the whole startup sequence on a prepared cluster.
func (c *Cluster) start(ctx context.Context) error {
	etcdBin, apiBin, err := binaries(ctx, c.opts)
	if err != nil {
		return err
	}
	etcdURL, err := c.startEtcd(ctx, etcdBin)
	if err != nil {
		return err
	}
	c.EtcdURL = etcdURL
	if err := c.prepareAPIServer(apiBin, etcdURL); err != nil {
		return err
	}
	if err := c.StartAPIServer(ctx); err != nil {
		return err
	}
	if err := c.newClients(); err != nil {
		return err
	}
	if err := c.writeKubeconfig(c.Kubeconfig, c.adminToken); err != nil {
		return err
	}
	return c.installCRDs(ctx)
}

// CAData returns, as PEM, the CA that signed the API server's serving
// certificate: what clients, and pods through kube-root-ca.crt, must trust.
func (c *Cluster) CAData() []byte { return c.caData }

// RESTConfig returns a new config for the admin user; callers may modify it.
func (c *Cluster) RESTConfig() *rest.Config {
	return c.RESTConfigForToken(c.adminToken)
}

// RESTConfigForToken returns a config that authenticates with token.
func (c *Cluster) RESTConfigForToken(token string) *rest.Config {
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caData},
		// Tests create objects in bursts; client-side throttling at the
		// default 5 QPS would only slow them down.
		QPS:   200,
		Burst: 400,
	}
}

// Client returns a clientset for the admin user, shared by all callers.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Dynamic returns a dynamic client for the admin user, for the MCS types.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dynamic }

// newClients builds the shared admin clients once the CA is known.
func (c *Cluster) newClients() error {
	var err error
	if c.client, err = kubernetes.NewForConfig(c.RESTConfig()); err != nil {
		return fmt.Errorf("create clientset: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(c.RESTConfig()); err != nil {
		return fmt.Errorf("create dynamic client: %w", err)
	}
	return nil
}

// Stop kills both processes and removes WorkDir if Start created it. It is
// safe to call more than once and from several goroutines.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	// The API server first, so it does not log a storm of etcd errors.
	c.apiserver.Kill()
	c.etcd.Kill()
	var errs []error
	if c.logFile != nil {
		errs = append(errs, c.logFile.Close())
	}
	if c.ownWorkDir {
		errs = append(errs, os.RemoveAll(c.WorkDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop cluster: %w", err)
	}
	return nil
}
