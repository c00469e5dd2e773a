// Package mesosstatetest makes Mesos master states for tests and
// benchmarks: Generate builds a mesosstate.State of a chosen shape,
// deterministic from a seed, and Marshal writes it as the JSON a real
// master serves, with the fields DNS does not read, so that fetching and
// decoding cost what they cost against a real master.
package mesosstatetest

import (
	"fmt"
	"math/rand/v2"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// GenOptions is the shape of a generated cluster. Fractions are in [0, 1].
type GenOptions struct {
	// Seed makes the state: the same options give the same state.
	Seed uint64
	// Tasks is the number of running tasks.
	Tasks int
	// Frameworks and Agents: how many (at least 1 each). Half of the apps
	// go to the first framework, as a cluster's Marathon holds most of
	// them; the rest spread evenly.
	Frameworks, Agents int
	// NotRunning adds tasks in other states (TASK_STAGING, TASK_KILLING,
	// TASK_KILLED...), as a fraction of Tasks: they must get no records.
	NotRunning float64
	// NetInfo: apps whose tasks report container IPs in network_infos.
	// Those on IPv6 agents get an IPv6 address too (dual stack).
	NetInfo float64
	// DockerLabel: apps whose tasks report a container IP in the
	// Docker.NetworkSettings.IPAddress status label (old Docker executor).
	DockerLabel float64
	// Discovery: apps with a DiscoveryInfo of named ports.
	Discovery float64
	// IPv6Agents: agents whose PID holds an IPv6 address. Real libprocess
	// advertises IPv4 (agents started with --ip6 report IPv6 only in
	// network_infos); these cover a plugin's IPv6 agent path.
	IPv6Agents float64
	// MaxInstances: each app (one task name) runs 1 to MaxInstances
	// instances, uniformly; 0 means 8.
	MaxInstances int
	// OddNames: frameworks whose names need sanitizing: dots, upper case,
	// spaces, underscores. A twentieth of app names have dots or
	// underscores whatever this is.
	OddNames float64
}

// BenchShape is the cluster of the plugin benchmarks: 10,000 running tasks
// in 100 frameworks on 500 agents, with 5% more tasks in other states,
// a third of apps on container networks, a tenth with Docker label IPs, a
// third with DiscoveryInfo, a tenth of agents IPv6 and 1-8 instances an
// app.
var BenchShape = GenOptions{
	Seed: 1, Tasks: 10000, Frameworks: 100, Agents: 500, NotRunning: 0.05, NetInfo: 0.3, DockerLabel: 0.1,
	Discovery: 0.3, IPv6Agents: 0.1, MaxInstances: 8, OddNames: 0.1,
}

// BenchShapeWorst is BenchShape at its most costly for DNS: every app
// alone under its name (the most distinct names), on a dual-stack
// container network, with named ports in DiscoveryInfo.
var BenchShapeWorst = GenOptions{
	Seed: 1, Tasks: 10000, Frameworks: 100, Agents: 500, NotRunning: 0.05, NetInfo: 1, Discovery: 1,
	IPv6Agents: 1, MaxInstances: 1, OddNames: 0.1,
}

// app is what the instances of one task name share.
type app struct {
	name      string
	framework int
	netinfo   bool
	docker    bool
	discovery bool
	ports     int
}

// gen carries one Generate call.
type gen struct {
	opts     GenOptions
	r        *rand.Rand
	masterID string
	state    *mesosstate.State
	apps     []app // made so far, for non-running instances of them
	tasks    int   // tasks made, for unique container addresses
}

// Generate returns a state of the given shape, leading master included
// (master@10.0.0.1:5050).
func Generate(opts GenOptions) *mesosstate.State {
	if opts.MaxInstances <= 0 {
		opts.MaxInstances = 8
	}
	opts.Frameworks, opts.Agents = max(opts.Frameworks, 1), max(opts.Agents, 1)
	g := &gen{opts: opts, r: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x6d65736f73))}
	g.masterID = g.uuid()
	const leader = "master@10.0.0.1:5050"
	g.state = &mesosstate.State{
		Leader: leader, PID: leader, Hostname: "master-1.example.internal",
		LeaderInfo: &mesosstate.MasterInfo{ID: g.masterID, PID: leader, Hostname: "master-1.example.internal", Port: 5050,
			Address: &mesosstate.Address{Hostname: "master-1.example.internal", IP: "10.0.0.1", Port: 5050}},
	}
	g.agents()
	g.frameworks()
	for made := 0; made < opts.Tasks; {
		a := g.app(made)
		n := min(1+g.r.IntN(opts.MaxInstances), opts.Tasks-made)
		for range n {
			g.addTask(a, "TASK_RUNNING")
		}
		made += n
	}
	// Half the tasks in other states are instances of running apps (one
	// being killed, another staging), half of apps of their own.
	for i := range int(float64(opts.Tasks)*opts.NotRunning + 0.5) {
		a := g.app(opts.Tasks + i)
		if len(g.apps) > 0 && g.r.IntN(2) == 0 {
			a = g.apps[g.r.IntN(len(g.apps))]
		}
		g.addTask(a, notRunning[g.r.IntN(len(notRunning))])
	}
	return g.state
}

var notRunning = []string{"TASK_STAGING", "TASK_STARTING", "TASK_KILLING", "TASK_KILLED", "TASK_FAILED", "TASK_LOST", "TASK_FINISHED"}

func (g *gen) agents() {
	for i := range g.opts.Agents {
		host := fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
		if g.r.Float64() < g.opts.IPv6Agents {
			host = fmt.Sprintf("[fd00:a:0:%x::%x]", i/250, i%250+1)
		}
		g.state.Slaves = append(g.state.Slaves, mesosstate.Slave{
			ID:       fmt.Sprintf("%s-S%d", g.masterID, i),
			Hostname: fmt.Sprintf("agent-%04d.example.internal", i),
			PID:      "slave(1)@" + host + ":5051",
		})
	}
}

var frameworkNames = []string{"marathon", "metronome", "spark", "kafka", "cassandra", "jenkins", "elastic", "hdfs", "flink", "chronos"}

// oddFrameworkNames are formats of names that need sanitizing.
var oddFrameworkNames = []string{"Marathon.Prod-%d", "My Framework %d", "spark_streaming.team%d", "KAFKA %d.eu"}

func (g *gen) frameworks() {
	for i := range g.opts.Frameworks {
		name := frameworkNames[i%len(frameworkNames)]
		if i >= len(frameworkNames) {
			name = fmt.Sprintf("%s-%d", name, i/len(frameworkNames))
		}
		if i > 0 && g.r.Float64() < g.opts.OddNames {
			name = fmt.Sprintf(oddFrameworkNames[g.r.IntN(len(oddFrameworkNames))], i)
		}
		g.state.Frameworks = append(g.state.Frameworks, mesosstate.Framework{
			ID:       fmt.Sprintf("%s-%04d", g.masterID, i),
			Name:     name,
			Hostname: fmt.Sprintf("10.0.0.%d", i%3+1),
			PID:      fmt.Sprintf("scheduler-%s@10.0.0.%d:%d", g.uuid(), i%3+1, 40000+i),
			Active:   true,
		})
	}
}

var appWords = []string{"search", "web", "api", "cache", "db", "worker", "auth", "billing", "queue", "ingest", "report", "mail"}

// app makes the app numbered i.
func (g *gen) app(i int) app {
	a := app{
		name:      fmt.Sprintf("%s-%d", appWords[i%len(appWords)], i),
		framework: g.r.IntN(g.opts.Frameworks),
		netinfo:   g.r.Float64() < g.opts.NetInfo,
		docker:    g.r.Float64() < g.opts.DockerLabel,
		discovery: g.r.Float64() < g.opts.Discovery,
		ports:     g.r.IntN(4),
	}
	if g.r.IntN(2) == 0 {
		a.framework = 0
	}
	switch g.r.IntN(40) {
	case 0:
		a.name = fmt.Sprintf("%s.%s", a.name, appWords[(i+1)%len(appWords)]) // a Marathon group
	case 1:
		a.name = fmt.Sprintf("%s_%d", appWords[i%len(appWords)], i)
	}
	if a.discovery {
		a.ports = max(a.ports, 1)
	}
	g.apps = append(g.apps, a)
	return a
}

var portNames = []string{"http", "metrics", "admin"}

// addTask adds an instance of a in the given state.
func (g *gen) addTask(a app, state string) {
	g.tasks++
	agentIdx := g.r.IntN(len(g.state.Slaves))
	agent := &g.state.Slaves[agentIdx]
	fw := &g.state.Frameworks[a.framework]
	t := mesosstate.Task{
		ID: a.name + "." + g.uuid(), Name: a.name, FrameworkID: fw.ID, SlaveID: agent.ID, State: state,
	}
	first := 31000 + g.r.IntN(990)
	if a.ports > 0 {
		t.Resources.Ports = fmt.Sprintf("[%d-%d]", first, first+a.ports-1)
	}
	if a.discovery {
		t.Discovery = g.discovery(a, first)
	}
	t.Statuses = g.statuses(a, state, agent)
	fw.Tasks = append(fw.Tasks, t)
}

func (g *gen) discovery(a app, first int) *mesosstate.DiscoveryInfo {
	d := &mesosstate.DiscoveryInfo{Visibility: "FRAMEWORK", Name: a.name}
	for i := range a.ports {
		scope := mesosstate.Labels{Labels: []mesosstate.Label{{Key: mesosstate.NetworkScopeLabel, Value: "host"}}}
		number := first + i
		if a.netinfo {
			number = 8080 + i
			scope.Labels = []mesosstate.Label{{Key: mesosstate.NetworkScopeLabel, Value: "container"},
				{Key: mesosstate.NetworkNameLabel, Value: "dcos"}}
		}
		d.Ports.Ports = append(d.Ports.Ports, mesosstate.DiscoveryPort{
			Number: number, Name: portNames[i%len(portNames)], Protocol: "tcp", Labels: &scope,
		})
	}
	return d
}

// statuses returns the status updates a task in state has had.
func (g *gen) statuses(a app, state string, agent *mesosstate.Slave) []mesosstate.Status {
	t0 := 1.7e9 + float64(g.r.IntN(1e7)) + float64(g.r.IntN(1e6))/1e6
	switch state {
	case "TASK_STAGING":
		return nil
	case "TASK_STARTING":
		return []mesosstate.Status{{State: state, Timestamp: t0}}
	}
	run := mesosstate.Status{State: "TASK_RUNNING", Timestamp: t0 + 2.5}
	if a.netinfo {
		ni := mesosstate.NetworkInfo{Name: "dcos", IPAddresses: []mesosstate.IPAddress{{
			Protocol: "IPv4", IPAddress: fmt.Sprintf("9.%d.%d.%d", g.tasks>>16&255, g.tasks>>8&255, g.tasks&255)}}}
		if agent.PID[len("slave(1)@")] == '[' {
			ni.IPAddresses = append(ni.IPAddresses, mesosstate.IPAddress{Protocol: "IPv6", IPAddress: fmt.Sprintf("fd01:b::%x", g.tasks)})
		}
		run.ContainerStatus = &mesosstate.ContainerStatus{NetworkInfos: []mesosstate.NetworkInfo{ni}}
	}
	if a.docker {
		run.Labels = []mesosstate.Label{{Key: mesosstate.DockerIPLabel, Value: fmt.Sprintf("172.17.0.%d", g.r.IntN(250)+2)}}
	}
	out := []mesosstate.Status{{State: "TASK_STARTING", Timestamp: t0}, run}
	if state != "TASK_RUNNING" {
		out = append(out, mesosstate.Status{State: state, Timestamp: t0 + 3600})
	}
	return out
}

// uuid returns a random version-4-looking UUID from the generator's source.
func (g *gen) uuid() string {
	a, b := g.r.Uint64(), g.r.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0x3fff|0x8000, b&0xffffffffffff)
}
