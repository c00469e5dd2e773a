package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// Node is the running cluster: control plane, runtime, kubelet, kube-proxy.
type Node struct {
	cfg        Config
	detach     bool // -keep: the daemons outlive the runner (keep.go)
	api        *kubeapi.Cluster
	tools      string // the tools directory of hack/tools.sh
	kubectl    string
	sock       string // containerd's socket
	daemons    []*daemon
	kubelet    *daemon
	logDir     string
	resolvConf string
}

// setupNetwork gives the namespace the node's own interface and the sysctls
// a node has. Nothing routes out: only the Service range is routed, to the
// node's bridge, so that the node itself reaches Service VIPs through
// kube-proxy's rules.
func setupNetwork() error {
	steps := [][]string{
		{"ip", "link", "add", nodeBridge, "type", "bridge"},
		{"ip", "addr", "add", nodeIP + "/24", "dev", nodeBridge},
		{"ip", "addr", "add", stubIP + "/32", "dev", nodeBridge},
		{"ip", "link", "set", nodeBridge, "up"},
		{"ip", "route", "add", ServiceCIDR, "dev", nodeBridge, "src", nodeIP},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	// Forwarding between the pods' bridge and the node; bridged traffic
	// through iptables, so that a pod reaching a pod of the same bridge
	// through a VIP gets its reply from the VIP.
	for file, value := range map[string]string{
		"/proc/sys/net/ipv4/ip_forward":                 "1",
		"/proc/sys/net/bridge/bridge-nf-call-iptables":  "1",
		"/proc/sys/net/bridge/bridge-nf-call-ip6tables": "1",
		"/proc/sys/net/ipv4/conf/all/route_localnet":    "1",
	} {
		if err := os.WriteFile(file, []byte(value), 0o644); err != nil {
			return fmt.Errorf("set %s: %w", file, err)
		}
	}
	return nil
}

// Start starts the whole cluster and returns once the node is Ready;
// detach (-keep) leaves it running after the runner.
func Start(ctx context.Context, cfg Config, detach bool, logf func(string, ...any)) (*Node, error) {
	n := &Node{cfg: cfg, detach: detach, logDir: path("logs")}
	if err := os.MkdirAll(n.logDir, 0o755); err != nil {
		return nil, err
	}
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"network", func(context.Context) error { return setupNetwork() }},
		{"tools", n.findTools},
		{"etcd and kube-apiserver", n.startAPI},
		{"containerd", n.startContainerd},
		{"kube-controller-manager, kube-scheduler", n.startControllers},
		{"kubelet", n.startKubelet},
		{"kube-proxy", n.startProxy},
		{"node Ready", n.waitNodeReady},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.fn(ctx); err != nil {
			return n, fmt.Errorf("%s: %w", s.what, err)
		}
		logf("%s: up in %.1fs", s.what, time.Since(start).Seconds())
	}
	return n, nil
}

// findTools builds (once per version) and finds the cluster's binaries.
func (n *Node) findTools(ctx context.Context) error {
	root, err := kubeapi.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "tools.sh"), "e2e")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("hack/tools.sh e2e: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	n.tools = lines[len(lines)-1]
	if n.kubectl, err = n.tool("kubectl"); err != nil {
		return err
	}
	if n.detach {
		return linkKubectl(n.kubectl)
	}
	return nil
}

// tool returns the path of a binary hack/tools.sh built (name-VERSION).
func (n *Node) tool(name string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(n.tools, name+"-v*"))
	if len(matches) == 0 {
		return "", fmt.Errorf("%s not found in %s", name, n.tools)
	}
	return matches[len(matches)-1], nil
}

// startAPI starts etcd and kube-apiserver on the node's address, with the
// Service range inside the namespace and the admission a cluster has.
func (n *Node) startAPI(ctx context.Context) error {
	// Both servers' output; with -keep each writes a log of its own
	// (detachedLauncher).
	var log io.Writer = io.Discard
	if !n.detach {
		f, err := os.Create(filepath.Join(n.logDir, "kubeapi.log"))
		if err != nil {
			return err
		}
		log = f
	}
	flags := []string{
		"--service-cluster-ip-range=" + n.cfg.ServiceCIDRs,
		// The API server reaches kubelet (logs, exec) by the node's IP:
		// there is no resolver for its host name here.
		"--kubelet-preferred-address-types=InternalIP",
	}
	if n.cfg.AuditPolicy != "" {
		policy := path("audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(n.cfg.AuditPolicy), 0o644); err != nil {
			return err
		}
		flags = append(flags, "--audit-policy-file="+policy, "--audit-log-path="+auditLog(), "--audit-log-format=json")
	}
	opts := kubeapi.Options{
		ToolsDir: n.tools,
		WorkDir:  path("kubeapi"),
		Log:      log,
		Address:  nodeIP,
		// The MCS CRDs as the multicluster overlay's check wants them.
		ServiceImportVersions: []string{"v1beta1"},
		ReadyTimeout:          n.cfg.APIReady,
		// Pods get ServiceAccount tokens, as in any cluster.
		ServiceAccountAdmission: true,
		APIServerFlags:          flags,
	}
	var err error
	if n.detach {
		if opts.EtcdBinary, err = n.launcher("etcd"); err != nil {
			return err
		}
		if opts.APIServerBinary, err = n.launcher("kube-apiserver"); err != nil {
			return err
		}
	}
	n.api, err = kubeapi.Start(ctx, opts)
	if err != nil {
		return err
	}
	return os.WriteFile(path("kubeapi", "ca.crt"), n.api.CAData(), 0o644)
}

// startContainerd writes containerd's configuration (everything under the
// state directory) and starts it.
func (n *Node) startContainerd(ctx context.Context) error {
	n.sock = path("containerd", "containerd.sock")
	for _, d := range []string{path("containerd"), path("cni", "net.d"), path("cni", "ipam")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	conf := path("containerd", "config.toml")
	if err := os.WriteFile(conf, []byte(containerdConfig()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(path("cni", "net.d", "10-e2e.conflist"), []byte(cniConfig()), 0o644); err != nil {
		return err
	}
	d, err := n.start("containerd", "containerd", "--config", conf)
	if err != nil {
		return err
	}
	return WaitFor(ctx, 30*time.Second, "containerd's socket", func() error {
		if !d.alive() {
			return d.exitError()
		}
		return exec.CommandContext(ctx, "ctr", "--address", n.sock, "version").Run()
	})
}

// startControllers starts kube-controller-manager and kube-scheduler with
// the admin kubeconfig, serving nothing.
func (n *Node) startControllers(ctx context.Context) error {
	kcm, err := n.tool("kube-controller-manager")
	if err != nil {
		return err
	}
	sched, err := n.tool("kube-scheduler")
	if err != nil {
		return err
	}
	if _, err := n.start("kube-controller-manager", kcm, append([]string{
		"--kubeconfig=" + n.api.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		// Pods get the API server's CA as kube-root-ca.crt.
		"--root-ca-file=" + path("kubeapi", "ca.crt"),
		"--service-cluster-ip-range=" + n.cfg.ServiceCIDRs,
		"--allocate-node-cidrs=false",
		"--use-service-account-credentials=false",
	}, n.cfg.ControllerFlags...)...); err != nil {
		return err
	}
	_, err = n.start("kube-scheduler", sched,
		"--kubeconfig="+n.api.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	)
	return err
}

// startKubelet writes kubelet's configuration and starts it; clusterDNS is
// the DNS address pods get in their resolv.conf.
func (n *Node) startKubelet(ctx context.Context) error {
	return n.RestartKubelet(ctx, DNSVIP)
}

// RestartKubelet (re)starts kubelet with pods' nameserver clusterDNS;
// running pods keep running.
func (n *Node) RestartKubelet(ctx context.Context, clusterDNS string) error {
	if n.kubelet != nil {
		n.kubelet.stop()
	}
	bin, err := n.tool("kubelet")
	if err != nil {
		return err
	}
	if err := makeCgroupRoot(); err != nil {
		return err
	}
	n.resolvConf = path("resolv.conf")
	if err := os.WriteFile(n.resolvConf, []byte("nameserver "+stubIP+"\n"), 0o644); err != nil {
		return err
	}
	conf := path("kubelet.yaml")
	if err := os.WriteFile(conf, []byte(kubeletConfig(n.sock, n.resolvConf, clusterDNS)), 0o644); err != nil {
		return err
	}
	n.kubelet, err = n.start("kubelet", bin,
		"--config="+conf,
		"--kubeconfig="+n.api.Kubeconfig,
		"--root-dir="+path("kubelet"),
		"--hostname-override="+nodeName,
		"--node-ip="+nodeIP,
	)
	return err
}

// makeCgroupRoot creates kubelet's cgroupRoot in every hierarchy.
func makeCgroupRoot() error {
	hierarchies, err := os.ReadDir(cgroupFS)
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(cgroupFS, h.Name(), cgroupName)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// startProxy starts kube-proxy in iptables mode, touching no global sysctl.
func (n *Node) startProxy(ctx context.Context) error {
	bin, err := n.tool("kube-proxy")
	if err != nil {
		return err
	}
	conf := path("kube-proxy.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
clientConnection:
  kubeconfig: %s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`, podCIDR, nodeName, n.api.Kubeconfig)
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return err
	}
	_, err = n.start("kube-proxy", bin, "--config="+conf)
	return err
}

// waitNodeReady waits for the node to register and report Ready (its
// runtime and network up).
func (n *Node) waitNodeReady(ctx context.Context) error {
	return WaitFor(ctx, 3*time.Minute, "node "+nodeName+" Ready", func() error {
		if !n.kubelet.alive() {
			return n.kubelet.exitError()
		}
		nd, err := n.api.Client().CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not Ready yet")
	})
}

// Stop stops every daemon, newest first, then the API server.
func (n *Node) Stop() {
	for i := len(n.daemons) - 1; i >= 0; i-- {
		n.daemons[i].stop()
	}
	if n.api != nil {
		_ = n.api.Stop()
	}
}

// launcher returns the detached launcher of a tool kubeapi starts.
func (n *Node) launcher(name string) (string, error) {
	bin, err := n.tool(name)
	if err != nil {
		return "", err
	}
	return detachedLauncher(name, bin)
}

// start starts a daemon with its log in logDir: detached, and recorded in
// keptPIDs, with -keep.
func (n *Node) start(name, bin string, args ...string) (*daemon, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if n.detach {
		attr = detachedAttr()
	}
	d, err := startDaemon(name, filepath.Join(n.logDir, name+".log"), attr, bin, args...)
	if err != nil {
		return nil, err
	}
	n.daemons = append(n.daemons, d)
	if n.detach {
		if err := recordKept(d.cmd.Process.Pid, name); err != nil {
			return d, err
		}
	}
	return d, nil
}
