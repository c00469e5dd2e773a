// Package mesosstate is the lean Go view of a Mesos master's /master/state
// document, and the parsers DNS needs to read it: libprocess PIDs, port
// ranges, task addresses and the Mesos-DNS label rules.
//
// A master's state is large (a few kilobytes of JSON per task: resources,
// executors, health checks, container specs) and is fetched again on every
// poll. The types here hold only the fields DNS reads; the decoder skips
// the rest, so they are never allocated. Each field added costs memory
// per task at every poll: add one only when a record needs it. The JSON
// tags are the state's grammar: Decode and Decoder (decoder.go) read the
// state's own objects by them, and json.Unmarshal the tasks and agents.
// The omitempty tags are for writers of test states (mesosstatetest):
// they leave out what a master leaves out.
package mesosstate

import "errors"

var (
	// ErrEmpty: the body holds nothing but white space.
	ErrEmpty = errors.New("empty state")
	// ErrNotObject: the body is JSON, but not an object (null, an array...).
	ErrNotObject = errors.New("state is not a JSON object")
	// ErrTruncated: the body ends inside the state object.
	ErrTruncated = errors.New("state truncated")
	// ErrMalformed: not JSON, or a value of the wrong type (a string where
	// an array belongs); the wrapped json error says where.
	ErrMalformed = errors.New("malformed state")
	// ErrTrailingData: more than white space follows the state object.
	ErrTrailingData = errors.New("data after the state object")
	// ErrNoLeader: the state names no leading master. A leading master
	// always names itself, so a state without one is not a leader's.
	ErrNoLeader = errors.New("state names no leader")
	// ErrBadLeader: the leader field is not a libprocess PID.
	ErrBadLeader = errors.New("state's leader is not a PID")
	// ErrBadPID: a libprocess PID that is not name@host:port.
	ErrBadPID = errors.New("malformed libprocess PID")
	// ErrBadPorts: a port range text that is not Mesos's [a-b, c-d] form,
	// or that holds an inverted or out-of-range range.
	ErrBadPorts = errors.New("malformed port ranges")
	// ErrIPSource: an IP source list that is empty, repeats a source or
	// names one that does not exist.
	ErrIPSource = errors.New("bad IP sources")
)

// State is a master's /master/state, as much of it as DNS reads.
type State struct {
	// Leader is the leading master's PID ("master@10.0.0.1:5050"); it is
	// where the leader.<domain> records point.
	Leader string `json:"leader"`
	// LeaderInfo carries the leader's hostname, which PIDs lack.
	LeaderInfo *MasterInfo `json:"leader_info"`
	// PID is the answering master's own PID: equal to Leader when it leads.
	PID string `json:"pid"`
	// Hostname is the answering master's host name.
	Hostname   string      `json:"hostname"`
	Frameworks []Framework `json:"frameworks"`
	// Slaves are the registered agents. Newer masters may also write the
	// list as "agents"; every version writes "slaves".
	Slaves []Slave `json:"slaves"`
}

// MasterInfo describes a master (the state's leader_info).
type MasterInfo struct {
	ID       string   `json:"id"`
	PID      string   `json:"pid"`
	Hostname string   `json:"hostname"`
	Port     int      `json:"port"`
	Address  *Address `json:"address"`
}

// Address is a master's advertised address.
type Address struct {
	Hostname string `json:"hostname"`
	IP       string `json:"ip"`
	Port     int    `json:"port"`
}

// Framework is a registered framework with its current tasks. Completed
// and unreachable tasks are not decoded: they get no records.
type Framework struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Hostname and PID locate the scheduler for the <framework>.<domain>
	// records. Frameworks on the HTTP scheduler API have no PID.
	Hostname string `json:"hostname"`
	PID      string `json:"pid"`
	Active   bool   `json:"active"`
	Tasks    []Task `json:"tasks"`
}

// Slave is a registered agent.
type Slave struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname"`
	// PID ("slave(1)@10.0.0.2:5051") gives the agent's address.
	PID string `json:"pid"`
}

// Task is a task that is not yet completed, in any state.
type Task struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	FrameworkID string `json:"framework_id"`
	SlaveID     string `json:"slave_id"`
	// State is the latest state, such as TASK_RUNNING or TASK_STAGING.
	State string `json:"state"`
	// Statuses are the status updates in the order the master got them;
	// the latest TASK_RUNNING one carries the container's addresses.
	Statuses  []Status       `json:"statuses"`
	Resources Resources      `json:"resources"`
	Discovery *DiscoveryInfo `json:"discovery"`
}

// Resources is the part of a task's resources DNS reads.
type Resources struct {
	// Ports is the host port range text, "[31000-31001, 31005-31005]";
	// ParsePorts reads it.
	Ports string `json:"ports"`
}

// Status is one task status update.
type Status struct {
	State string `json:"state"`
	// Timestamp is in seconds since the epoch.
	Timestamp float64 `json:"timestamp"`
	// Labels carry the container IP of old executors (see IPSources).
	Labels          []Label          `json:"labels,omitempty"`
	ContainerStatus *ContainerStatus `json:"container_status,omitempty"`
}

// ContainerStatus is what the agent learnt when it set the container up.
type ContainerStatus struct {
	NetworkInfos []NetworkInfo `json:"network_infos"`
}

// NetworkInfo is one network the container joined.
type NetworkInfo struct {
	Name        string      `json:"name,omitempty"`
	IPAddresses []IPAddress `json:"ip_addresses,omitempty"`
	// IPAddress is the single address of Mesos before 0.26.
	IPAddress string `json:"ip_address,omitempty"`
}

// IPAddress is one address of a container ("IPv4" or "IPv6").
type IPAddress struct {
	IPAddress string `json:"ip_address"`
	Protocol  string `json:"protocol,omitempty"`
}

// Label is a free-form key and value.
type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Labels is Mesos's protobuf wrapper around a label list, as it appears
// inside DiscoveryInfo: {"labels": [...]}.
type Labels struct {
	Labels []Label `json:"labels"`
}

// DiscoveryInfo is what the framework declared for service discovery.
type DiscoveryInfo struct {
	Visibility string         `json:"visibility"`
	Name       string         `json:"name,omitempty"`
	Ports      DiscoveryPorts `json:"ports"`
}

// DiscoveryPorts is the protobuf wrapper {"ports": [...]}.
type DiscoveryPorts struct {
	Ports []DiscoveryPort `json:"ports"`
}

// DiscoveryPort is a port the task serves on, maybe named ("http").
type DiscoveryPort struct {
	Number   int    `json:"number"`
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Labels may say on which network the port is (see IPSourceAuto).
	Labels *Labels `json:"labels,omitempty"`
}

// taskRunning is the state of a running task, and of the status that
// carries its addresses.
const taskRunning = "TASK_RUNNING"

// Running reports whether the task is running: only running tasks get
// records.
func (t *Task) Running() bool { return t.State == taskRunning }
