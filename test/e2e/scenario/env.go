// Package scenario is what every scenario of the e2e run shares: the
// cluster, report and images they act on (Env), the steps a run is made
// of (Step, ErrFatal), the cluster DNS they install (kubeadm's, deploy/'s
// node-local), the load clients whose lookups they count, and the probes
// they ask (a DNS query, a metric). Each scenario is a package below this
// one, a type that owns its state and its section of the report.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/images"
	"github.com/schemadns/schemadns/test/e2e/report"
)

// The namespaces and names the scenarios share.
const (
	// DNSNamespace and DNSDeploy are the cluster DNS's, deploy/base's as
	// kubeadm's.
	DNSNamespace = "kube-system"
	DNSDeploy    = "coredns"
	// AppNS holds the workloads and the client pods.
	AppNS = "e2e"
	// NodeLocalIP is the node-local cache's address.
	NodeLocalIP = "169.254.20.10"
)

// Env is one run inside the namespace as the scenarios see it: the
// cluster, the stub, the report and our image.
type Env struct {
	Cluster *cluster.Node
	Stub    *cluster.Stub
	Report  *report.Report
	// OurImage is containerd's name of our image; OurTag its tag, for the
	// kustomize override.
	OurImage, OurTag string
	// Start is when the run started, for the log's times.
	Start time.Time
}

// Logf logs a line with the seconds since the run started.
func (e *Env) Logf(format string, args ...any) {
	fmt.Printf("e2e %6.1fs: %s\n", time.Since(e.Start).Seconds(), fmt.Sprintf(format, args...))
}

// Placeholders are the names the embedded manifests use for images and
// addresses.
func (e *Env) Placeholders() map[string]string {
	return map[string]string{
		"STOCK_IMAGE":   e.OurImage,
		"DNS_VIP":       cluster.DNSVIP,
		"BUSYBOX_IMAGE": images.Busybox,
		"GLIBC_IMAGE":   images.GlibcClient,
		"MUSL_IMAGE":    images.MuslClient,
		"RATE":          fmt.Sprint(loadRate),
		"THREADS":       fmt.Sprint(loadThreads),
	}
}

// Step is one step of a run: its failure is reported, and ends the run
// only if it wraps ErrFatal.
type Step struct {
	Name string
	Run  func(context.Context) error
}

// ErrFatal marks a failure after which nothing else can be checked.
var ErrFatal = errors.New("cannot go on")
