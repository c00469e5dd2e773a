package cluster

import (
	"fmt"

	"github.com/schemadns/schemadns/test/e2e/images"
)

// containerdConfig is containerd 1.6's configuration for this machine:
// cgroups v1 through cgroupfs, no negative oom_score_adj (the process lacks
// CAP_SYS_RESOURCE), the pause image built here, the pods' network
// namespaces and runc's state under the state directory.
func containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[5]q
    conf_dir = %[6]q
`, path("containerd", "root"), path("containerd", "state"), path("containerd", "containerd.sock"),
		images.Pause, cniBinDir, path("cni", "net.d"), path("runc"))
}

// cniConfig is the pods' network: one bridge, host-local addresses, the
// node as their gateway, no masquerade.
func cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, podCIDR, podGateway, path("cni", "ipam"))
}

// kubeletConfig is kubelet's configuration for this machine: cgroups v1
// through cgroupfs below cgroupName, the pods' DNS, no eviction on a shared
// disk, exec and logs open to the API server without webhooks.
func kubeletConfig(sock, resolvConf, clusterDNS string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
containerRuntimeEndpoint: unix://%s
address: %s
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
clusterDomain: cluster.local
clusterDNS: [%q]
resolvConf: %s
failSwapOn: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
localStorageCapacityIsolation: false
podLogsDir: %s
`, cgroupName, sock, nodeIP, clusterDNS, resolvConf, path("pod-logs"))
}
