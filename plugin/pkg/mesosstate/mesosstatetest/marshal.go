package mesosstatetest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// Marshal writes s as a Mesos 1.x master writes /master/state: compact
// JSON with the bulk DNS does not read (build information, flags,
// resources, containers, health checks, task labels), made up
// deterministically from the fields s has: a task is written as a Docker
// task with health-checked ports and a Marathon-like set of labels, as a
// real master shows one, so that decoding it costs what a real master's
// task does. That comes to about 1.8 KB a running task in BenchShape and
// 2.3 KB in BenchShapeWorst (agents and frameworks included). The added
// fields decode to nothing, so Decode(Marshal(s)) holds what s holds.
func Marshal(s *mesosstate.State) []byte {
	w := wireState{
		Version: "1.11.0", GitSHA: "b2c1c7bf1b0d3c2e8e4c6c1a0e4f2d7f5b3a9c81", GitTag: "1.11.0",
		BuildDate: "2020-11-24 11:32:07", BuildTime: 1606217527, BuildUser: "mesos",
		StartTime: 1.7e9, ElectedTime: 1.7e9 + 2.25, ID: masterID(s), PID: s.PID, Hostname: s.Hostname,
		Capabilities: []string{"AGENT_UPDATE", "AGENT_DRAINING", "QUOTA_V2"},
		Leader:       s.Leader, LeaderInfo: wireMaster(s.LeaderInfo), Cluster: "example", LogDir: "/var/log/mesos",
		Flags: masterFlags, ActivatedSlaves: len(s.Slaves),
		Slaves: make([]wireSlave, 0, len(s.Slaves)), Frameworks: make([]wireFramework, 0, len(s.Frameworks)),
		CompletedFrameworks: []struct{}{}, OrphanTasks: []struct{}{}, UnregisteredFrameworks: []struct{}{},
	}
	for _, a := range s.Slaves {
		w.Slaves = append(w.Slaves, newWireSlave(a))
	}
	for i := range s.Frameworks {
		w.Frameworks = append(w.Frameworks, newWireFramework(&s.Frameworks[i]))
	}
	body, err := json.Marshal(w)
	if err != nil {
		panic(fmt.Sprintf("mesosstatetest: marshal a state: %v", err)) // plain structs: cannot fail
	}
	return body
}

// masterID is the leader's ID when the state has it.
func masterID(s *mesosstate.State) string {
	if s.LeaderInfo != nil {
		return s.LeaderInfo.ID
	}
	return ""
}

var masterFlags = map[string]string{
	"agent_ping_timeout": "15secs", "agent_reregister_timeout": "10mins", "allocation_interval": "1secs",
	"authenticate_agents": "false", "authenticate_frameworks": "false", "authenticate_http_readonly": "false",
	"authorizers": "local", "cluster": "example", "framework_sorter": "drf", "hostname_lookup": "true",
	"http_authenticators": "basic", "log_dir": "/var/log/mesos", "max_agent_ping_timeouts": "5",
	"max_completed_frameworks": "50", "max_completed_tasks_per_framework": "1000", "port": "5050", "quorum": "2",
	"registry": "replicated_log", "registry_fetch_timeout": "1mins", "registry_store_timeout": "20secs",
	"roles": "slave_public", "user_sorter": "drf", "work_dir": "/var/lib/mesos/master", "zk_session_timeout": "10secs",
}

type wireState struct {
	Version                string            `json:"version"`
	GitSHA                 string            `json:"git_sha"`
	GitTag                 string            `json:"git_tag"`
	BuildDate              string            `json:"build_date"`
	BuildTime              int64             `json:"build_time"`
	BuildUser              string            `json:"build_user"`
	StartTime              float64           `json:"start_time"`
	ElectedTime            float64           `json:"elected_time"`
	ID                     string            `json:"id"`
	PID                    string            `json:"pid"`
	Hostname               string            `json:"hostname"`
	Capabilities           []string          `json:"capabilities"`
	ActivatedSlaves        int               `json:"activated_slaves"`
	DeactivatedSlaves      int               `json:"deactivated_slaves"`
	UnreachableSlaves      int               `json:"unreachable_slaves"`
	Cluster                string            `json:"cluster"`
	Leader                 string            `json:"leader,omitempty"`
	LeaderInfo             *wireMasterInfo   `json:"leader_info,omitempty"`
	LogDir                 string            `json:"log_dir"`
	Flags                  map[string]string `json:"flags"`
	Slaves                 []wireSlave       `json:"slaves"`
	Frameworks             []wireFramework   `json:"frameworks"`
	CompletedFrameworks    []struct{}        `json:"completed_frameworks"`
	OrphanTasks            []struct{}        `json:"orphan_tasks"`
	UnregisteredFrameworks []struct{}        `json:"unregistered_frameworks"`
}

type wireMasterInfo struct {
	ID       string              `json:"id"`
	IP       uint32              `json:"ip"` // MasterInfo.ip: the IPv4 address in network order
	Port     int                 `json:"port"`
	PID      string              `json:"pid"`
	Hostname string              `json:"hostname"`
	Version  string              `json:"version"`
	Address  *mesosstate.Address `json:"address,omitempty"`
}

func wireMaster(m *mesosstate.MasterInfo) *wireMasterInfo {
	if m == nil {
		return nil
	}
	return &wireMasterInfo{ID: m.ID, IP: 16777226, Port: m.Port, PID: m.PID, Hostname: m.Hostname, Version: "1.11.0", Address: m.Address}
}

type wireResources struct {
	Disk  float64 `json:"disk"`
	Mem   float64 `json:"mem"`
	GPUs  float64 `json:"gpus"`
	CPUs  float64 `json:"cpus"`
	Ports string  `json:"ports,omitempty"`
}

type wireSlave struct {
	ID               string            `json:"id"`
	Hostname         string            `json:"hostname"`
	Port             int               `json:"port"`
	PID              string            `json:"pid"`
	RegisteredTime   float64           `json:"registered_time"`
	Resources        wireResources     `json:"resources"`
	UsedResources    wireResources     `json:"used_resources"`
	OfferedResources wireResources     `json:"offered_resources"`
	Unreserved       wireResources     `json:"unreserved_resources"`
	Attributes       map[string]string `json:"attributes"`
	Active           bool              `json:"active"`
	Deactivated      bool              `json:"deactivated"`
	Version          string            `json:"version"`
	Capabilities     []string          `json:"capabilities"`
}

func newWireSlave(a mesosstate.Slave) wireSlave {
	all := wireResources{Disk: 400000, Mem: 63000, CPUs: 16, Ports: "[1025-2180, 2182-3887, 3889-5049, 5052-8079, 8082-8180, 8182-32000]"}
	return wireSlave{
		ID: a.ID, Hostname: a.Hostname, Port: 5051, PID: a.PID, RegisteredTime: 1.7e9 + 30,
		Resources: all, UsedResources: wireResources{Mem: 8192, CPUs: 4.5}, Unreserved: all,
		Attributes: map[string]string{"rack": "r" + a.ID[len(a.ID)-1:], "zone": "eu-west-1a"},
		Active:     true, Version: "1.11.0",
		Capabilities: []string{"MULTI_ROLE", "HIERARCHICAL_ROLE", "RESERVATION_REFINEMENT", "RESOURCE_PROVIDER",
			"RESIZE_VOLUME", "AGENT_OPERATION_FEEDBACK", "AGENT_DRAINING", "TASK_RESOURCE_LIMITS"},
	}
}

type wireFramework struct {
	ID               string        `json:"id"`
	Name             string        `json:"name"`
	PID              string        `json:"pid,omitempty"`
	UsedResources    wireResources `json:"used_resources"`
	OfferedResources wireResources `json:"offered_resources"`
	Capabilities     []string      `json:"capabilities"`
	Hostname         string        `json:"hostname"`
	WebUIURL         string        `json:"webui_url"`
	Active           bool          `json:"active"`
	Connected        bool          `json:"connected"`
	Recovered        bool          `json:"recovered"`
	User             string        `json:"user"`
	FailoverTimeout  float64       `json:"failover_timeout"`
	Checkpoint       bool          `json:"checkpoint"`
	Role             string        `json:"role"`
	RegisteredTime   float64       `json:"registered_time"`
	UnregisteredTime float64       `json:"unregistered_time"`
	Principal        string        `json:"principal"`
	Resources        wireResources `json:"resources"`
	Tasks            []wireTask    `json:"tasks"`
	UnreachableTasks []struct{}    `json:"unreachable_tasks"`
	CompletedTasks   []struct{}    `json:"completed_tasks"`
	Offers           []struct{}    `json:"offers"`
	Executors        []struct{}    `json:"executors"`
}

func newWireFramework(f *mesosstate.Framework) wireFramework {
	w := wireFramework{
		ID: f.ID, Name: f.Name, PID: f.PID, Capabilities: []string{"GPU_RESOURCES", "PARTITION_AWARE", "MULTI_ROLE"},
		Hostname: f.Hostname, WebUIURL: "http://" + f.Hostname + ":8080", Active: f.Active, Connected: f.Active,
		User: "root", FailoverTimeout: 604800, Checkpoint: true, Role: "*", RegisteredTime: 1.7e9 + 60,
		Principal:        "dcos_" + strings.ToLower(strings.Fields(f.Name + " x")[0]),
		Tasks:            make([]wireTask, 0, len(f.Tasks)),
		UnreachableTasks: []struct{}{}, CompletedTasks: []struct{}{}, Offers: []struct{}{}, Executors: []struct{}{},
	}
	for i := range f.Tasks {
		w.Tasks = append(w.Tasks, newWireTask(&f.Tasks[i]))
	}
	return w
}

type wireTask struct {
	ID           string                    `json:"id"`
	Name         string                    `json:"name"`
	FrameworkID  string                    `json:"framework_id"`
	ExecutorID   string                    `json:"executor_id"`
	SlaveID      string                    `json:"slave_id"`
	State        string                    `json:"state"`
	Resources    wireResources             `json:"resources"`
	Role         string                    `json:"role"`
	Statuses     []wireStatus              `json:"statuses"`
	Labels       []mesosstate.Label        `json:"labels,omitempty"`
	Discovery    *mesosstate.DiscoveryInfo `json:"discovery,omitempty"`
	Container    wireContainer             `json:"container"`
	HealthChecks []wireHealthCheck         `json:"health_checks,omitempty"`
	User         string                    `json:"user"`
}

type wireStatus struct {
	State           string              `json:"state"`
	Timestamp       float64             `json:"timestamp"`
	Labels          []mesosstate.Label  `json:"labels,omitempty"`
	ContainerStatus wireContainerStatus `json:"container_status"`
	Healthy         bool                `json:"healthy,omitempty"`
}

type wireContainerStatus struct {
	ContainerID  wireValue                `json:"container_id"`
	NetworkInfos []mesosstate.NetworkInfo `json:"network_infos,omitempty"`
	ExecutorPID  int                      `json:"executor_pid"`
}

type wireValue struct {
	Value string `json:"value"`
}

type wireContainer struct {
	Type         string        `json:"type"`
	Docker       wireDocker    `json:"docker"`
	NetworkInfos []wireNetwork `json:"network_infos,omitempty"`
	Volumes      []wireVolume  `json:"volumes"`
}

type wireDocker struct {
	Image          string            `json:"image"`
	Network        string            `json:"network"`
	PortMappings   []wirePortMapping `json:"port_mappings,omitempty"`
	Privileged     bool              `json:"privileged"`
	ForcePullImage bool              `json:"force_pull_image"`
	Parameters     []wireParameter   `json:"parameters"`
}

type wirePortMapping struct {
	HostPort      int    `json:"host_port"`
	ContainerPort int    `json:"container_port"`
	Protocol      string `json:"protocol"`
}

type wireParameter struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type wireNetwork struct {
	Name string `json:"name"`
}

type wireVolume struct {
	Mode          string `json:"mode"`
	ContainerPath string `json:"container_path"`
	HostPath      string `json:"host_path"`
}

type wireHealthCheck struct {
	DelaySeconds        float64  `json:"delay_seconds"`
	IntervalSeconds     float64  `json:"interval_seconds"`
	TimeoutSeconds      float64  `json:"timeout_seconds"`
	ConsecutiveFailures int      `json:"consecutive_failures"`
	GracePeriodSeconds  float64  `json:"grace_period_seconds"`
	Type                string   `json:"type"`
	HTTP                wireHTTP `json:"http"`
}

type wireHTTP struct {
	Scheme   string `json:"scheme"`
	Port     int    `json:"port"`
	Path     string `json:"path"`
	Protocol string `json:"protocol"`
}

// taskSizes are the cpus and mem a task may have.
var taskSizes = []struct{ cpus, mem float64 }{{0.1, 128}, {0.25, 256}, {0.5, 512}, {1, 1024}, {2, 4096}}

func newWireTask(t *mesosstate.Task) wireTask {
	h := fnv.New64a()
	_, _ = h.Write([]byte(t.ID))
	sum := h.Sum64()
	size := taskSizes[sum%uint64(len(taskSizes))]
	ports, _ := mesosstate.ParsePorts(t.Resources.Ports)
	w := wireTask{
		ID: t.ID, Name: t.Name, FrameworkID: t.FrameworkID, SlaveID: t.SlaveID, State: t.State,
		Resources: wireResources{Disk: 0, Mem: size.mem, CPUs: size.cpus, Ports: t.Resources.Ports},
		Role:      "*", User: "nobody", Discovery: t.Discovery,
		Statuses: make([]wireStatus, 0, len(t.Statuses)),
		Labels: []mesosstate.Label{{Key: "owner", Value: fmt.Sprintf("team-%d", sum%17)}, {Key: "HAPROXY_GROUP", Value: "internal"},
			{Key: "DCOS_SERVICE_NAME", Value: t.Name}, {Key: "release", Value: fmt.Sprintf("2024.%d.%d", sum%12+1, sum%28+1)}},
		Container: newWireContainer(t, ports, sum),
	}
	for i, st := range t.Statuses {
		ws := wireStatus{State: st.State, Timestamp: st.Timestamp, Labels: st.Labels, Healthy: st.State == "TASK_RUNNING" && len(ports) > 0,
			ContainerStatus: wireContainerStatus{ContainerID: wireValue{containerID(sum)}, ExecutorPID: int(sum%30000) + 1000 + i}}
		if st.ContainerStatus != nil {
			ws.ContainerStatus.NetworkInfos = st.ContainerStatus.NetworkInfos
		}
		w.Statuses = append(w.Statuses, ws)
	}
	for _, p := range ports[:min(len(ports), 2)] {
		w.HealthChecks = append(w.HealthChecks, wireHealthCheck{DelaySeconds: 15, IntervalSeconds: 10, TimeoutSeconds: 20,
			ConsecutiveFailures: 3, GracePeriodSeconds: 300, Type: "HTTP",
			HTTP: wireHTTP{Scheme: "http", Port: int(p), Path: "/health", Protocol: "HTTP1"}})
	}
	return w
}

// newWireContainer describes the container a task with these statuses
// and ports would have: on a container network (USER), on Docker's bridge
// (a Docker label IP) or on the host's network.
func newWireContainer(t *mesosstate.Task, ports []uint16, sum uint64) wireContainer {
	c := wireContainer{Type: "DOCKER", Docker: wireDocker{
		Image:   fmt.Sprintf("registry.example.internal/%s:1.%d.%d", strings.ToLower(t.Name), sum%20, sum%7),
		Network: "HOST", Parameters: []wireParameter{{Key: "log-driver", Value: "journald"}, {Key: "ulimit", Value: "nofile=65536"}},
	}, Volumes: []wireVolume{{Mode: "RO", ContainerPath: "/etc/ssl/certs", HostPath: "/etc/ssl/certs"}}}
	for _, st := range t.Statuses {
		switch {
		case st.ContainerStatus != nil && len(st.ContainerStatus.NetworkInfos) > 0:
			c.Docker.Network = "USER"
			c.NetworkInfos = []wireNetwork{{Name: st.ContainerStatus.NetworkInfos[0].Name}}
		case len(st.Labels) > 0:
			c.Docker.Network = "BRIDGE"
		}
	}
	if c.Docker.Network != "HOST" {
		for i, p := range ports {
			c.Docker.PortMappings = append(c.Docker.PortMappings, wirePortMapping{HostPort: int(p), ContainerPort: 8080 + i, Protocol: "tcp"})
		}
	}
	return c
}

func containerID(sum uint64) string {
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", sum>>32, sum>>16&0xffff, sum>>4&0xfff, sum&0xfff, sum*2654435761&0xffffffffffff)
}
