package mesos

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
	"github.com/schemadns/schemadns/soak/observe"
)

// shape is the generated cluster of the Mesos scenarios: the plugin
// benchmarks' BenchShape at tasks running tasks, with frameworks and
// agents in the same proportion, and IPv4 agents only (the checker asks A
// records; a task on an IPv6 agent would answer none).
func shape(tasks int) mesosstatetest.GenOptions {
	o := mesosstatetest.BenchShape
	o.Tasks = tasks
	o.Frameworks = max(3, tasks*o.Frameworks/mesosstatetest.BenchShape.Tasks)
	o.Agents = max(10, tasks*o.Agents/mesosstatetest.BenchShape.Tasks)
	o.IPv6Agents = 0
	return o
}

// Checked names: the apps whose tasks change (hot) and a sample of the
// others (cold) have their task name, SRV name and every instance name
// checked.
const (
	hotEvery   = 10 // one app in ten is hot, at least minHot
	minHot     = 10
	coldSample = 50
	// markerApp is a task of the first framework restarted in every good
	// state with the state's number in its address (markerBase + n): an
	// answer for it says which state the server serves.
	markerApp = "soak-marker"
)

var (
	markerBase  = netip.MustParseAddr("10.255.0.0")
	startedBase = netip.MustParseAddr("10.254.0.0") // container addresses of tasks the soak starts
)

// appKey names an app: a framework (by index) and a task name (or its
// label, in cluster.checked).
type appKey struct {
	fw   int
	name string
}

// labelKey is k with the task name made a label: apps whose names differ
// only in what the label drops share their DNS names.
func labelKey(k appKey) appKey { return appKey{k.fw, mesosstate.TaskLabel(k.name, false)} }

// cluster is the cluster the scenarios serve: a generated state
// whose hot apps lose and gain instances at each step, as a scheduler
// kills and starts tasks between polls.
type cluster struct {
	r  *rand.Rand
	st *mesosstate.State // the current state, changed in place
	// templates are a running instance of each hot app, copied for the
	// instances started; hot lists them in a fixed order.
	templates map[appKey]mesosstate.Task
	hot       []appKey
	// checked are the apps whose names are checked, by label: the hot
	// ones, the cold sample and the marker.
	checked map[appKey]bool
	churn   int // instances killed and started at each step
	started int // tasks started so far, for their addresses and IDs
	steps   int
}

// newCluster generates the state of tasks running tasks and picks
// the hot and cold apps.
func newCluster(tasks int, seed uint64) *cluster {
	c := &cluster{
		r:  rand.New(rand.NewPCG(seed, 0x736f616b)),
		st: mesosstatetest.Generate(shape(tasks)), templates: map[appKey]mesosstate.Task{},
		checked: map[appKey]bool{}, churn: max(3, tasks/200),
	}
	apps := c.apps()
	hot := min(len(apps), max(minHot, len(apps)/hotEvery))
	for i := range hot {
		k := apps[i*len(apps)/hot]
		c.hot = append(c.hot, k)
		c.checked[labelKey(k)] = true
	}
	for _, k := range apps {
		if len(c.checked) < len(c.hot)+coldSample && !slices.Contains(c.hot, k) {
			c.checked[labelKey(k)] = true
		}
	}
	for fi := range c.st.Frameworks {
		for _, t := range c.st.Frameworks[fi].Tasks {
			if k := (appKey{fi, t.Name}); t.Running() && slices.Contains(c.hot, k) {
				if _, ok := c.templates[k]; !ok {
					c.templates[k] = t
				}
			}
		}
	}
	c.checked[appKey{0, markerApp}] = true
	return c
}

// apps lists the apps with a running task, in the state's order.
func (c *cluster) apps() []appKey {
	var out []appKey
	seen := map[appKey]bool{}
	for fi := range c.st.Frameworks {
		for _, t := range c.st.Frameworks[fi].Tasks {
			if k := (appKey{fi, t.Name}); t.Running() && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// step changes the state as a scheduler would between two polls: churn
// instances of hot apps killed (gone from the state, as a master moves
// them to completed_tasks) and churn started, on random agents with new
// ports and container addresses; every tenth step one hot app loses all
// its instances (its names go), to be started again by later steps.
func (c *cluster) step() {
	c.steps++
	for range c.churn {
		c.kill(c.hot[c.r.IntN(len(c.hot))])
	}
	if c.steps%10 == 0 {
		k := c.hot[c.r.IntN(len(c.hot))]
		for c.kill(k) {
		}
	}
	for range c.churn {
		c.start(c.hot[c.r.IntN(len(c.hot))])
	}
}

// kill removes one running instance of k; false when it has none.
func (c *cluster) kill(k appKey) bool {
	f := &c.st.Frameworks[k.fw]
	var idx []int
	for i, t := range f.Tasks {
		if t.Name == k.name && t.Running() {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return false
	}
	i := idx[c.r.IntN(len(idx))]
	f.Tasks = slices.Delete(f.Tasks, i, i+1)
	return true
}

// start adds an instance of k like its template: the same name, ports
// count, DiscoveryInfo and kind of address, on a random agent.
func (c *cluster) start(k appKey) {
	c.started++
	tmpl := c.templates[k]
	agent := c.st.Slaves[c.r.IntN(len(c.st.Slaves))]
	t := mesosstate.Task{ID: fmt.Sprintf("%s.soak-%d-%x", k.name, c.started, c.r.Uint64()), Name: k.name,
		FrameworkID: tmpl.FrameworkID, SlaveID: agent.ID, State: "TASK_RUNNING", Discovery: tmpl.Discovery}
	if ports, _ := mesosstate.ParsePorts(tmpl.Resources.Ports); len(ports) > 0 {
		first := 31000 + c.r.IntN(990)
		t.Resources.Ports = fmt.Sprintf("[%d-%d]", first, first+len(ports)-1)
	}
	t.Statuses = runningStatuses(tmpl, observe.Nth(startedBase, uint32(c.started)))
	c.st.Frameworks[k.fw].Tasks = append(c.st.Frameworks[k.fw].Tasks, t)
}

// runningStatuses are the statuses of a task just started like tmpl: its
// container address addr when tmpl has one in network_infos, its labels.
func runningStatuses(tmpl mesosstate.Task, addr netip.Addr) []mesosstate.Status {
	now := float64(time.Now().UnixNano()) / 1e9
	run := mesosstate.Status{State: "TASK_RUNNING", Timestamp: now}
	for _, st := range tmpl.Statuses {
		if st.State != "TASK_RUNNING" {
			continue
		}
		run.Labels = st.Labels
		if st.ContainerStatus != nil && len(st.ContainerStatus.NetworkInfos) > 0 {
			run.ContainerStatus = &mesosstate.ContainerStatus{NetworkInfos: []mesosstate.NetworkInfo{{
				Name: st.ContainerStatus.NetworkInfos[0].Name, IPAddresses: []mesosstate.IPAddress{{Protocol: "IPv4", IPAddress: addr.String()}}}}}
		}
	}
	return []mesosstate.Status{{State: "TASK_STARTING", Timestamp: now - 1}, run}
}

// setMarker restarts the marker task with the address of good state n.
func (c *cluster) setMarker(n int) {
	f := &c.st.Frameworks[0]
	f.Tasks = slices.DeleteFunc(f.Tasks, func(t mesosstate.Task) bool { return t.Name == markerApp })
	now := float64(time.Now().UnixNano()) / 1e9
	f.Tasks = append(f.Tasks, mesosstate.Task{ID: fmt.Sprintf("%s.%d", markerApp, n), Name: markerApp, FrameworkID: f.ID,
		SlaveID: c.st.Slaves[0].ID, State: "TASK_RUNNING", Statuses: []mesosstate.Status{{State: "TASK_RUNNING", Timestamp: now,
			ContainerStatus: &mesosstate.ContainerStatus{NetworkInfos: []mesosstate.NetworkInfo{{Name: "dcos",
				IPAddresses: []mesosstate.IPAddress{{Protocol: "IPv4", IPAddress: observe.Nth(markerBase, uint32(n)).String()}}}}}}}})
}

// markerName is the marker's A name in the zone.
func (c *cluster) markerName() string {
	return markerApp + "." + mesosstate.FrameworkName(c.st.Frameworks[0].Name, false) + "." + zone
}

// agentless is the state a newly elected leader serves before the agents
// register again: the frameworks, without tasks or agents.
func (c *cluster) agentless() *mesosstate.State {
	s := &mesosstate.State{Frameworks: slices.Clone(c.st.Frameworks)}
	for i := range s.Frameworks {
		s.Frameworks[i].Tasks = nil
	}
	return s
}

// zone is the zone the scenarios serve.
const zone = "mesos."

// expect returns what every checked name answers in the current state
// served by the leader at leader (an address): by query key (see
// queryKey), the canonical value of its records (see canonical); checked
// names absent from the map have no records. It follows the naming
// document on its own (README of mesosschema), using only mesosstate's
// parsers: task and framework labels, instance labels, addresses by the
// default IP sources, port ranges. Only tasks in TASK_RUNNING on an agent
// the state lists have records.
func (c *cluster) expect(leader netip.Addr) map[string]string {
	sets := map[string][]string{}
	add := func(qtype uint16, name string, v ...string) {
		k := queryKey(name, qtype)
		sets[k] = append(sets[k], v...)
	}
	add(dns.TypeA, "leader."+zone, leader.String())
	agents := map[string]netip.Addr{}
	for _, s := range c.st.Slaves {
		if p, err := mesosstate.ParsePID(s.PID); err == nil {
			if a, ok := p.Addr(); ok {
				agents[s.ID] = a.Unmap()
			}
		}
	}
	for fi := range c.st.Frameworks {
		f := &c.st.Frameworks[fi]
		fw := mesosstate.FrameworkName(f.Name, false)
		for i := range f.Tasks {
			t := &f.Tasks[i]
			agent, ok := agents[t.SlaveID]
			if !t.Running() || !ok || fw == "" {
				continue
			}
			label := t.Name
			if t.Discovery != nil && t.Discovery.Name != "" {
				label = t.Discovery.Name
			}
			if label = mesosstate.TaskLabel(label, false); label == "" || !c.checked[appKey{fi, label}] {
				continue
			}
			instance := mesosstate.InstanceLabel(label, t.ID, t.SlaveID) + "." + fw + "." + zone
			var ips []string
			for _, a := range t.IPs(mesosstate.DefaultIPSources, agent) {
				if a.Is4() {
					ips = append(ips, a.String())
				}
			}
			add(dns.TypeA, label+"."+fw+"."+zone, ips...)
			if t.Name != markerApp {
				add(dns.TypeA, instance, ips...)
				add(dns.TypeSRV, "_"+label+"._tcp."+fw+"."+zone, srvValues(t, instance)...)
			}
		}
	}
	out := make(map[string]string, len(sets))
	for k, v := range sets {
		if len(v) > 0 {
			out[k] = canonical(v)
		}
	}
	return out
}

// srvValues are the records of _<task>._tcp.<fw> that one instance adds:
// without DiscoveryInfo each host port, to <instance>.<fw>.slave; with it,
// each DiscoveryInfo port in TCP (or in no protocol), to <instance>.<fw>.
func srvValues(t *mesosstate.Task, instance string) []string {
	var out []string
	if t.Discovery == nil || t.Discovery.Name == "" {
		ports, _ := mesosstate.ParsePorts(t.Resources.Ports)
		slave := strings.TrimSuffix(instance, zone) + "slave." + zone
		for _, p := range ports {
			out = append(out, srvValue(p, slave))
		}
		return out
	}
	for _, p := range t.Discovery.Ports.Ports {
		proto := mesosstate.TaskLabel(p.Protocol, false)
		if p.Number > 0 && p.Number <= 65535 && (proto == "" || proto == "tcp") {
			out = append(out, srvValue(uint16(p.Number), instance))
		}
	}
	return out
}

func srvValue(port uint16, target string) string {
	return strconv.Itoa(int(port)) + " " + strings.ToLower(target)
}

// queryKey identifies a checked question: the type and the name.
func queryKey(name string, qtype uint16) string { return dns.TypeToString[qtype] + " " + name }

// parseQueryKey is the reverse of queryKey.
func parseQueryKey(k string) (string, uint16) {
	t, name, _ := strings.Cut(k, " ")
	return name, dns.StringToType[t]
}

// canonical is a record set as one string: its values sorted, each once.
func canonical(values []string) string {
	v := slices.Clone(values)
	slices.Sort(v)
	return strings.Join(slices.Compact(v), ",")
}

// answerCanonical is what an answer holds, as canonical writes it: the A
// addresses or the SRV records ("port target") of its answer section;
// NXDOMAIN and NODATA hold nothing. False for any other rcode.
func answerCanonical(r *dns.Msg) (string, bool) {
	if r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
		return "", false
	}
	var v []string
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			v = append(v, rr.A.String())
		case *dns.SRV:
			v = append(v, srvValue(rr.Port, rr.Target))
		}
	}
	return canonical(v), true
}
