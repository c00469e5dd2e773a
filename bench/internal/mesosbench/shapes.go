package mesosbench

import (
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/schemadns/schemadns/internal/toolreport"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// Shape is a Mesos cluster mesosschema is measured on: a master's
// state made by mesosstatetest.Generate.
type Shape struct {
	Name  string // M1 …
	Title string // what it stands for
	Gen   mesosstatetest.GenOptions
	// Worst: the shape at its most costly for DNS, reported next to the
	// others as their worst case.
	Worst bool
}

// Describe is the options that make the state, for the report.
func (s Shape) Describe() string {
	g := s.Gen
	instances := fmt.Sprintf("1–%d instances an app", g.MaxInstances)
	if g.MaxInstances <= 0 {
		instances = "1–8 instances an app" // Generate's default
	} else if g.MaxInstances == 1 {
		instances = "one instance an app (every task its own name)"
	}
	out := fmt.Sprintf("%s running tasks (and %.0f%% more in other states) in %d frameworks on %d agents, %s",
		toolreport.Thousands(g.Tasks), 100*g.NotRunning, g.Frameworks, g.Agents, instances)
	return out + fmt.Sprintf("; %.0f%% of apps on a container network (dual stack on IPv6 agents), %.0f%% with a Docker "+
		"label IP, %.0f%% with DiscoveryInfo named ports, %.0f%% of agents IPv6, %.0f%% of frameworks with names to "+
		"sanitize (generator seed %d)",
		100*g.NetInfo, 100*g.DockerLabel, 100*g.Discovery, 100*g.IPv6Agents, 100*g.OddNames, g.Seed)
}

// ShapesAt are the Mesos shapes of each scale: mesosstatetest's
// benchmark shapes, and a tenth of each for development.
var ShapesAt = map[string][]Shape{
	"default": {
		{Name: "M1", Title: "Mesos cluster", Gen: mesosstatetest.BenchShape},
		{Name: "M2", Title: "Mesos, worst case: every task its own name, dual stack, named ports", Gen: mesosstatetest.BenchShapeWorst, Worst: true},
	},
	"small": {
		{Name: "M1", Title: "Mesos cluster", Gen: tenth(mesosstatetest.BenchShape)},
		{Name: "M2", Title: "Mesos, worst case: every task its own name, dual stack, named ports", Gen: tenth(mesosstatetest.BenchShapeWorst), Worst: true},
	},
}

// tenth is a shape with a tenth of the tasks, frameworks and agents.
func tenth(g mesosstatetest.GenOptions) mesosstatetest.GenOptions {
	g.Tasks, g.Frameworks, g.Agents = g.Tasks/10, max(g.Frameworks/10, 1), max(g.Agents/10, 1)
	return g
}

// StateFacts describe a generated state, for the report.
type StateFacts struct {
	Running, Other       int // tasks running, and in other states
	Apps                 int // distinct task names (per framework) of the running tasks
	Frameworks, Agents   int
	JSONBytes, GzipBytes int // /master/state as served, and gzipped as a client asking for it gets it
	Names                int // names mesosschema serves (coredns_mesosschema_names)
	ZoneRecords          int // records of its AXFR, the file plugin's zone
}

func factsOf(st *mesosstate.State) StateFacts {
	f := StateFacts{Frameworks: len(st.Frameworks), Agents: len(st.Slaves)}
	apps := map[string]bool{}
	for _, fw := range st.Frameworks {
		for _, t := range fw.Tasks {
			if !t.Running() {
				f.Other++
				continue
			}
			f.Running++
			apps[fw.ID+"/"+t.Name] = true
		}
	}
	f.Apps = len(apps)
	return f
}

// ledBy is st served by the master at hostport: its leader, pid and
// leader_info name it, as a leading master's state does (st is not
// changed). mesosmaster.SetStateOf does the same for the master's own
// address; here it is the tap's, which the servers poll.
func ledBy(st *mesosstate.State, hostport string) *mesosstate.State {
	own := *st
	ap := netip.MustParseAddrPort(hostport)
	host, port := ap.Addr().String(), int(ap.Port())
	pid := "master@" + hostport
	own.Leader, own.PID, own.Hostname = pid, pid, host
	info := mesosstate.MasterInfo{ID: "bench-master", PID: pid, Hostname: host, Port: port,
		Address: &mesosstate.Address{Hostname: host, IP: host, Port: port}}
	if st.LeaderInfo != nil && st.LeaderInfo.ID != "" {
		info.ID = st.LeaderInfo.ID
	}
	own.LeaderInfo = &info
	return &own
}

// probe is a name a change creates and the IPv4 address its A record
// must hold.
type probe struct {
	name string
	addr netip.Addr
}

// taskRef is where a task is in a state.
type taskRef struct{ fw, task int }

// mutator makes the states of the poll tests from a base state, each a
// copy: the base and the states made before are never changed (the
// unchanged frameworks, tasks and statuses are shared, read only).
type mutator struct {
	zone string // "mesos.", for the probes' names
	r    *rand.Rand
	// seq numbers the replacement tasks, for unique IDs and addresses.
	seq int
}

func newMutator(zone string, seed uint64) *mutator {
	return &mutator{zone: zone, r: rand.New(rand.NewPCG(seed, 0x62656e6368))}
}

// namedRunning lists the running tasks of st that get names (a framework
// and a task name with something valid in them).
func namedRunning(st *mesosstate.State) []taskRef {
	var out []taskRef
	for i, fw := range st.Frameworks {
		if mesosstate.FrameworkName(fw.Name, false) == "" {
			continue
		}
		for j := range fw.Tasks {
			if t := &fw.Tasks[j]; t.Running() && mesosstate.TaskLabel(taskName(t), false) != "" {
				out = append(out, taskRef{i, j})
			}
		}
	}
	return out
}

// taskName is the name DNS gives a task: its DiscoveryInfo name when it
// has one, as Mesos-DNS does.
func taskName(t *mesosstate.Task) string {
	if t.Discovery != nil && t.Discovery.Name != "" {
		return t.Discovery.Name
	}
	return t.Name
}

// replace returns a copy of st with n running tasks replaced by new
// instances of the same apps (a rolling restart: new task IDs, so new
// instance names, on agents picked at random, with new container
// addresses), and a probe: the instance name of one of them and its IPv4
// address (the last task replaced is one that has one, when none before
// it had).
func (m *mutator) replace(st *mesosstate.State, n int) (*mesosstate.State, probe) {
	refs := namedRunning(st)
	n = min(n, len(refs))
	out := *st
	out.Frameworks = append([]mesosstate.Framework(nil), st.Frameworks...)
	copied := map[int]bool{}
	var first probe
	done := 0
	for _, k := range m.r.Perm(len(refs)) {
		if done == n {
			break
		}
		ref := refs[k]
		fw := &out.Frameworks[ref.fw]
		t := m.renew(&st.Frameworks[ref.fw].Tasks[ref.task], st.Slaves)
		p, ok := m.probeOf(&t, fw, st.Slaves)
		if !ok && first.name == "" && done == n-1 {
			continue
		}
		if !copied[ref.fw] {
			fw.Tasks = append([]mesosstate.Task(nil), fw.Tasks...)
			copied[ref.fw] = true
		}
		fw.Tasks[ref.task] = t
		done++
		if ok && first.name == "" {
			first = p
		}
	}
	return &out, first
}

// renew is a new instance of t's app: a new ID, an agent picked at
// random, its statuses timed now with new container addresses.
func (m *mutator) renew(t *mesosstate.Task, agents []mesosstate.Slave) mesosstate.Task {
	m.seq++
	nt := *t
	nt.ID = fmt.Sprintf("%s.bench-%08d", t.Name, m.seq)
	nt.SlaveID = agents[m.r.IntN(len(agents))].ID
	nt.Statuses = make([]mesosstate.Status, len(t.Statuses))
	for i, s := range t.Statuses {
		s.Timestamp = 1.8e9 + float64(m.seq)
		if s.ContainerStatus != nil {
			s.ContainerStatus = m.addresses(s.ContainerStatus)
		}
		nt.Statuses[i] = s
	}
	return nt
}

// addresses is cs with new addresses of the same families, from ranges
// the generator does not use (11.0.0.0/8, fd02:b::/64).
func (m *mutator) addresses(cs *mesosstate.ContainerStatus) *mesosstate.ContainerStatus {
	out := &mesosstate.ContainerStatus{}
	for _, ni := range cs.NetworkInfos {
		nn := mesosstate.NetworkInfo{Name: ni.Name}
		for _, ip := range ni.IPAddresses {
			a := fmt.Sprintf("11.%d.%d.%d", m.seq>>16&255, m.seq>>8&255, m.seq&255)
			if ip.Protocol == "IPv6" {
				a = fmt.Sprintf("fd02:b::%x", m.seq)
			}
			nn.IPAddresses = append(nn.IPAddresses, mesosstate.IPAddress{Protocol: ip.Protocol, IPAddress: a})
		}
		out.NetworkInfos = append(out.NetworkInfos, nn)
	}
	return out
}

// probeOf is t's instance name and the first of its IPv4 addresses, by
// the plugin's default IP sources (none: no probe).
func (m *mutator) probeOf(t *mesosstate.Task, fw *mesosstate.Framework, agents []mesosstate.Slave) (probe, bool) {
	var agentIP netip.Addr
	for _, a := range agents {
		if a.ID == t.SlaveID {
			if pid, err := mesosstate.ParsePID(a.PID); err == nil {
				agentIP, _ = pid.Addr()
			}
		}
	}
	label, fwName := mesosstate.TaskLabel(taskName(t), false), mesosstate.FrameworkName(fw.Name, false)
	if label == "" || fwName == "" {
		return probe{}, false
	}
	for _, a := range t.IPs(mesosstate.DefaultIPSources, agentIP) {
		if a = a.Unmap(); a.Is4() {
			return probe{name: mesosstate.InstanceLabel(label, t.ID, t.SlaveID) + "." + fwName + "." + m.zone, addr: a}, true
		}
	}
	return probe{}, false
}

// touch returns a copy of st whose bytes differ and whose records do not:
// the first status (TASK_STARTING) of one running task is timed later by
// step seconds, as a master's state changes in fields DNS does not read.
func touch(st *mesosstate.State, step float64) *mesosstate.State {
	for _, ref := range namedRunning(st) {
		t := &st.Frameworks[ref.fw].Tasks[ref.task]
		if len(t.Statuses) < 2 {
			continue
		}
		out := *st
		out.Frameworks = append([]mesosstate.Framework(nil), st.Frameworks...)
		fw := &out.Frameworks[ref.fw]
		fw.Tasks = append([]mesosstate.Task(nil), fw.Tasks...)
		nt := &fw.Tasks[ref.task]
		nt.Statuses = append([]mesosstate.Status(nil), t.Statuses...)
		nt.Statuses[0].Timestamp += step
		return &out
	}
	return st
}
