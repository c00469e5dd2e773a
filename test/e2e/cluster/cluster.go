// Package cluster brings the e2e run's one-node Kubernetes cluster up on
// this machine and drives it: the host side (the network namespace, the
// cleanup of whatever a run left, a cluster kept by -keep), the node
// (etcd, kube-apiserver, containerd, the controllers, kubelet,
// kube-proxy), the upstream stub DNS server, and the commands the
// scenarios give it: apply manifests and overlays, exec in pods, wait for
// rollouts and pods, cordon and evict, kill containers through the
// runtime, read their processes' memory and OOM kills.
//
// The node lives in a network namespace of its own (netnsName): its
// address, the pods' and the Services' are in 198.18.0.0/15, nothing is
// masqueraded and nothing routes out; upstream names go to a stub DNS
// server inside it. The e2e program runs twice: the outer one (on the
// host, Host) clears what an earlier run left, creates the namespace and
// runs itself inside it with nsenter, then clears everything again,
// whatever the inner run did (unless -keep, which leaves the cluster
// running: keep.go). The inner one (in the namespace, with the host's
// mounts, which kubelet and containerd must share) starts the cluster
// (Start) and runs the checks.
package cluster

import (
	"path/filepath"
	"time"
)

// The node's addresses, all inside the network namespace and 198.18.0.0/15.
const (
	nodeName    = "e2e-node"
	nodeIP      = "198.18.0.1"  // on the portless bridge e2e0; the API server's too
	stubIP      = "198.18.0.53" // the upstream stub DNS server, on e2e0
	podCIDR     = "198.18.1.0/24"
	podGateway  = "198.18.1.1" // cni0, made by the bridge CNI plugin
	ServiceCIDR = "198.19.0.0/16"
	DNSVIP      = "198.19.0.10" // the kube-dns Service
	StockVIP    = "198.19.0.11" // stock CoreDNS beside ours, for the delay comparison
	nodeBridge  = "e2e0"
	cniBinDir   = "/usr/lib/cni" // where Debian's containernetworking-plugins puts them
)

// Config is what differs between the clusters of a default run and of a
// thresholds run (package thresholds).
type Config struct {
	// ServiceCIDRs is the API server's Service range, or two (dual-stack).
	ServiceCIDRs string
	// AuditPolicy, if set, is the API server's audit policy; the events go
	// to auditLog.
	AuditPolicy string
	// APIReady bounds each wait for the API server to be ready, at start
	// and after a restart.
	APIReady time.Duration
	// ControllerFlags are added to kube-controller-manager's.
	ControllerFlags []string
}

// Default is the cluster of a default run.
var Default = Config{ServiceCIDRs: ServiceCIDR, APIReady: 3 * time.Minute}

// auditLog is where the API server writes its audit events, if any.
func auditLog() string { return path("logs", "audit.log") }

// path names a file in the state directory.
func path(parts ...string) string { return filepath.Join(append([]string{stateDir}, parts...)...) }

// Description says what ran, for the report's reader.
const Description = `## The cluster

One node on this machine, every part real: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kubelet and kube-proxy (iptables
mode) built at the pinned Kubernetes version (` + "`hack/tools.sh e2e`" + `),
containerd and runc from Debian, the bridge and host-local CNI plugins. The
node lives in a network namespace of its own: node ` + nodeIP + `, pods
` + podCIDR + `, Services ` + ServiceCIDR + ` (kube-dns at ` + DNSVIP + `), no
masquerade, no route out; upstream names go to a stub DNS server at
` + stubIP + ` that knows one name, ` + "`www.external.test`" + `. Images are
built here and imported: ours from ` + "`make image`" + `, a pause image,
a glibc client (Debian's libc, getent, dig), a static musl client and
busybox (Debian's busybox-static). The manifests are ` + "`deploy/`" + ` as
shipped, through a kustomization that changes only the image tag and the
kube-dns address (and, for the node-local overlay, that address in its
Corefile). Stock CoreDNS is kubeadm's addon (its Corefile, with the stock
` + "`kubernetes`" + ` plugin) run by the same binary.
`
