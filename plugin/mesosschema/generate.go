package mesosschema

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// genOptions are the options the records of a state depend on.
type genOptions struct {
	// ipSources is the order of the sources of a task's address.
	ipSources []string
	rfc952    bool
	// masters are the configured masters (host:port), in order: master0,
	// master1...
	masters []string
	// nsName is the nameserver's name below the zone ("ns1"), "" when it is
	// outside the zones; nsAddrs are its addresses.
	nsName  string
	nsAddrs []netip.Addr
	// maxName is the longest a name below the zone may be, so that it fits
	// in every zone served (253 characters in all).
	maxName int
}

// generated is what one state makes: every name with its records.
type generated struct {
	sets map[string]*dnszone.Facts
	// running is when each task instance began to run (its status's
	// timestamp), by instance name: the start of its programming latency.
	running map[string]time.Time
	// tasks counts the instances served; skipped those running but not
	// served (an unknown agent, a name with nothing valid in it).
	tasks, skipped int
	// partial: sets holds only the names changed since the state offered
	// before, nil for a name gone (incremental.go); names counts every name.
	partial bool
	names   int
}

// recordSet is a name's records while a state is read.
type recordSet struct {
	addrs []netip.Addr
	srvs  []dnszone.SRVRecord
	// ptr says which addresses' PTR records the name owns.
	ptr ptrRule
}

// ptrRule says which addresses of a name own their PTR records: data
// rather than a function, so that one task's records can be kept and
// compared between polls (incremental.go).
type ptrRule struct {
	// set: the name owns some; all: every address, else all but except.
	set, all bool
	except   netip.Addr
}

// fn is the rule as dnszone.NewRecords takes it (nil: none).
func (r ptrRule) fn() func(netip.Addr) bool {
	switch {
	case !r.set:
		return nil
	case r.all:
		return dnszone.AllPTR
	}
	except := r.except
	return func(a netip.Addr) bool { return a != except }
}

// generator reads one state into names.
type generator struct {
	o      *genOptions
	names  map[string]*recordSet
	agents map[string]netip.Addr
	out    generated
	// enum, when set, collects the records of each task for the HTTP
	// interface's /v1/enumerate.
	enum *enumeration
	// missed are the names an SRV record pointed to or PTR records were
	// claimed for that had no records yet, so the record or the claim was
	// left out. Read for one task alone (incremental.go): the task's
	// records depend on what came before it if another makes such a name.
	missed []string
}

// rfc952MaxLabel is the longest label with enforce_rfc952.
const rfc952MaxLabel = 24

// The protocols of SRV names when a port says none.
var bothProtocols = []string{"tcp", "udp"}

// generate makes the records of st, as the Mesos-DNS naming rules say.
func generate(st *mesosstate.State, o *genOptions, enum *enumeration) *generated {
	g := &generator{o: o, names: map[string]*recordSet{}, agents: map[string]netip.Addr{}, enum: enum,
		out: generated{running: map[string]time.Time{}}}
	g.agentRecords(st)
	g.masterRecords(st)
	for i := range st.Frameworks {
		g.framework(&st.Frameworks[i])
	}
	if o.nsName != "" {
		g.add(o.nsName, o.nsAddrs...)
	}
	g.out.sets = make(map[string]*dnszone.Facts, len(g.names))
	for name, rs := range g.names {
		if validName(name, o.maxName) {
			g.out.sets[name] = dnszone.NewRecords(name, rs.addrs, rs.srvs, rs.ptr.fn())
		}
	}
	return &g.out
}

// add gives name the addresses; a name with none does not exist.
func (g *generator) add(name string, addrs ...netip.Addr) {
	for _, a := range addrs {
		if a.IsValid() {
			rs := g.set(name)
			rs.addrs = append(rs.addrs, a)
		}
	}
}

// srv gives name an SRV record to target, which must have addresses.
func (g *generator) srv(name, target string, port uint16) {
	if port == 0 {
		return
	}
	if g.names[target] == nil {
		g.missed = append(g.missed, target)
		return
	}
	rs := g.set(name)
	rs.srvs = append(rs.srvs, dnszone.SRVRecord{Target: target, Port: port})
}

// own makes name the owner of the PTR records of those of its addresses
// that ptr says.
func (g *generator) own(name string, ptr ptrRule) {
	if rs := g.names[name]; rs != nil {
		rs.ptr = ptr
	} else {
		g.missed = append(g.missed, name)
	}
}

// allPTR: every address of the name owns its PTR record.
var allPTR = ptrRule{set: true, all: true}

func (g *generator) set(name string) *recordSet {
	rs := g.names[name]
	if rs == nil {
		rs = &recordSet{}
		g.names[name] = rs
	}
	return rs
}

// agentRecords: slave.<domain> answers every agent's address, and owns
// their PTR records; _slave._tcp.<domain> their ports.
func (g *generator) agentRecords(st *mesosstate.State) {
	for _, s := range st.Slaves {
		a, port := pidAddr(s.PID)
		if !a.IsValid() {
			a, _ = netip.ParseAddr(s.Hostname)
		}
		g.agents[s.ID] = a.Unmap()
		g.add("slave", a.Unmap())
		g.srv("_slave._tcp", "slave", port)
	}
	g.own("slave", allPTR)
}

// masterRecords: leader.<domain> and its SRV records, master.<domain> for
// every master, masterN.<domain> for each configured one in order (the
// leader appended when it is not listed), with PTR records, and
// _master._tcp and _master._udp to each masterN.
func (g *generator) masterRecords(st *mesosstate.State) {
	leader, leaderPort := pidAddr(st.Leader)
	if li := st.LeaderInfo; !leader.IsValid() && li != nil && li.Address != nil {
		leader, _ = netip.ParseAddr(li.Address.IP)
	}
	leader = leader.Unmap()
	g.add("leader", leader)
	g.add("master", leader)
	for _, proto := range bothProtocols {
		g.srv("_leader._"+proto, "leader", leaderPort)
	}
	seen, n := map[netip.AddrPort]bool{}, 0
	for _, m := range g.o.masters {
		ap, err := netip.ParseAddrPort(m)
		if err != nil {
			continue // a host name: no address to serve
		}
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if seen[ap] {
			continue
		}
		seen[ap] = true
		g.add("master", ap.Addr())
		g.masterN(n, ap.Addr(), ap.Port())
		n++
	}
	if leader.IsValid() && !seen[netip.AddrPortFrom(leader, leaderPort)] {
		g.masterN(n, leader, leaderPort)
	}
}

// masterN gives master n its name, PTR and SRV records.
func (g *generator) masterN(n int, addr netip.Addr, port uint16) {
	name := "master" + strconv.Itoa(n)
	g.add(name, addr)
	g.own(name, allPTR)
	for _, proto := range bothProtocols {
		g.srv("_master._"+proto, name, port)
	}
}

// framework: <framework>.<domain> answers the scheduler's address, with an
// SRV record of its port; then the records of its running tasks.
func (g *generator) framework(f *mesosstate.Framework) {
	name := mesosstate.FrameworkName(f.Name, g.o.rfc952)
	if name == "" {
		g.out.skipped += running(f.Tasks)
		return
	}
	if a, port := pidAddr(f.PID); a.IsValid() {
		g.add(name, a.Unmap())
		g.srv("_framework._tcp."+name, name, port)
	} else if a, err := netip.ParseAddr(f.Hostname); err == nil {
		g.add(name, a.Unmap())
	}
	var fw *enumFramework
	if g.enum != nil {
		fw = g.enum.framework(f.Name)
	}
	for i := range f.Tasks {
		if t := &f.Tasks[i]; t.Running() {
			g.task(t, name, fw)
		}
	}
}

// running counts the running tasks.
func running(ts []mesosstate.Task) int {
	n := 0
	for i := range ts {
		if ts[i].Running() {
			n++
		}
	}
	return n
}

// task makes the records of one running task of framework fw:
//
//	<task>.<fw>                       its addresses (every instance's)
//	<task>-<hash>-<agent>.<fw>        this instance's addresses (the SRV target
//	                                  of DiscoveryInfo ports; owns their PTR
//	                                  records unless they are the agent's)
//	<task>.<fw>.slave, <task>-<hash>-<agent>.<fw>.slave
//	                                  the agent's address
//	_<task>._tcp|_udp.<fw>.slave      each host port, to the instance on its agent
//	_<task>._tcp|_udp.<fw>            the same without DiscoveryInfo; with it,
//	                                  each DiscoveryInfo port, to the instance
//	_<port name>._<task>._<proto>.<fw> a named DiscoveryInfo port
//
// A DiscoveryInfo name that is not already a label ("big.dog", "db_main")
// also gets every one of these names as written, as Mesos-DNS serves
// them (mesosstate.VerbatimName): big.dog.<fw>, big.dog-<hash>-<agent>.<fw>
// and their .slave names with the same addresses, and _big.dog._tcp.<fw>,
// _http._big.dog._tcp.<fw>, _big.dog._udp.<fw>.slave... with the same
// ports. Their SRV records point to the instance's label name, the one
// that owns its PTR records, which resolves to the same address as the
// verbatim one Mesos-DNS points to.
func (g *generator) task(t *mesosstate.Task, fw string, enum *enumFramework) {
	agentAddr, ok := g.agents[t.SlaveID]
	label := taskName(t, g.o.rfc952)
	if !ok || label == "" {
		g.out.skipped++
		return
	}
	g.out.tasks++
	c := &taskContext{t: t, fw: fw, agent: agentAddr, ips: t.IPs(g.o.ipSources, agentAddr), rec: nopRecorder{}}
	if enum != nil {
		c.rec = enum.task(t.Name, t.ID)
	}
	c.own = instanceLabel(label, t.ID, t.SlaveID, g.o.rfc952) + "." + fw
	g.taskAddrs(c, label, c.own)
	// A container's address is this instance's alone; the agent's own
	// address (host networking) is slave.<domain>'s.
	g.own(c.own, ptrRule{set: true, except: agentAddr})
	if since, ok := runningSince(t); ok {
		g.out.running[c.own] = since
	}
	g.taskServices(c, label)
	if v := verbatimName(t, label); v != "" {
		g.taskAddrs(c, v, v+"-"+mesosstate.InstanceSuffix(t.ID, t.SlaveID)+"."+fw)
		g.taskServices(c, v)
	}
}

// taskContext is what every name of one task instance is made from.
type taskContext struct {
	t     *mesosstate.Task
	fw    string
	agent netip.Addr
	ips   []netip.Addr
	// own is the instance's name (its label's): every SRV target.
	own string
	rec recorder
}

// taskAddrs gives the task's name (one label, or a verbatim name of
// several) and the instance's name their addresses, and the same names
// under .slave the agent's.
func (g *generator) taskAddrs(c *taskContext, name, instance string) {
	name += "." + c.fw
	g.addRecorded(c.rec, name, c.ips)
	g.addRecorded(c.rec, instance, c.ips)
	g.addRecorded(c.rec, name+".slave", []netip.Addr{c.agent})
	g.addRecorded(c.rec, instance+".slave", []netip.Addr{c.agent})
}

// taskServices makes the SRV names of the task called name: the host
// ports under .slave (and, without DiscoveryInfo, without it), then the
// DiscoveryInfo ports.
func (g *generator) taskServices(c *taskContext, name string) {
	hasDI := c.t.Discovery != nil && c.t.Discovery.Name != ""
	ports, _ := mesosstate.ParsePorts(c.t.Resources.Ports) // a bad range gives no ports
	for _, p := range ports {
		for _, proto := range bothProtocols {
			srvName := "_" + name + "._" + proto + "." + c.fw
			g.srvRecorded(c.rec, srvName+".slave", c.own+".slave", p)
			if !hasDI {
				g.srvRecorded(c.rec, srvName, c.own+".slave", p)
			}
		}
	}
	if hasDI {
		g.discoveryPorts(c, name)
	}
}

// discoveryPorts: each DiscoveryInfo port, in its protocol (both when it
// says none), to the instance's own name, also under its port name.
func (g *generator) discoveryPorts(c *taskContext, name string) {
	for _, p := range c.t.Discovery.Ports.Ports {
		if p.Number <= 0 || p.Number > 65535 {
			continue
		}
		protos := bothProtocols
		if proto := mesosstate.TaskLabel(p.Protocol, g.o.rfc952); proto != "" {
			protos = []string{proto}
		}
		portName := mesosstate.TaskLabel(p.Name, g.o.rfc952)
		for _, proto := range protos {
			srvName := "_" + name + "._" + proto + "." + c.fw
			g.srvRecorded(c.rec, srvName, c.own, uint16(p.Number))
			if portName != "" {
				g.srvRecorded(c.rec, "_"+portName+"."+srvName, c.own, uint16(p.Number))
			}
		}
	}
}

func (g *generator) addRecorded(rec recorder, name string, addrs []netip.Addr) {
	g.add(name, addrs...)
	for _, a := range addrs {
		if a.IsValid() {
			rec.address(name, a)
		}
	}
}

func (g *generator) srvRecorded(rec recorder, name, target string, port uint16) {
	if g.names[target] != nil {
		g.srv(name, target, port)
		rec.service(name, target, port)
	} else {
		g.missed = append(g.missed, target)
	}
}

// taskName is a task's label: its DiscoveryInfo name when it has one (as
// Mesos-DNS does), else its own name, by the label rules.
func taskName(t *mesosstate.Task, rfc952 bool) string {
	if t.Discovery != nil && t.Discovery.Name != "" {
		return mesosstate.TaskLabel(t.Discovery.Name, rfc952)
	}
	return mesosstate.TaskLabel(t.Name, rfc952)
}

// verbatimName is the name as written that Mesos-DNS also gives a task
// named by its DiscoveryInfo, "" when it has none, the name is one
// Mesos-DNS never answers, or it is the label itself.
func verbatimName(t *mesosstate.Task, label string) string {
	if t.Discovery == nil {
		return ""
	}
	if v := mesosstate.VerbatimName(t.Discovery.Name); v != label {
		return v
	}
	return ""
}

// instanceLabel is the label of one instance of the task labelled label
// (mesosstate.InstanceLabel); with rfc952 the task's part is cut so that
// the label keeps to 24 characters, as every label then must.
func instanceLabel(label, taskID, agentID string, rfc952 bool) string {
	l := mesosstate.InstanceLabel(label, taskID, agentID)
	if !rfc952 || len(l) <= rfc952MaxLabel {
		return l
	}
	keep := len(label) - (len(l) - rfc952MaxLabel)
	if cut := strings.TrimRight(label[:max(keep, 0)], "-"); cut != "" {
		return mesosstate.InstanceLabel(cut, taskID, agentID)
	}
	return l
}

// runningSince is the timestamp of the task's latest TASK_RUNNING status.
func runningSince(t *mesosstate.Task) (time.Time, bool) {
	latest := -1.0
	for i := range t.Statuses {
		if s := &t.Statuses[i]; s.State == "TASK_RUNNING" && s.Timestamp > latest {
			latest = s.Timestamp
		}
	}
	if latest <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(latest*float64(time.Second))), true
}

// pidAddr is a libprocess PID's address and port, when its host is an
// address. Host names are not looked up: a DNS server that resolves names
// while it builds its own zone can wait on itself.
func pidAddr(pid string) (netip.Addr, uint16) {
	p, err := mesosstate.ParsePID(pid)
	if err != nil {
		return netip.Addr{}, 0
	}
	a, ok := p.Addr()
	if !ok {
		return netip.Addr{}, 0
	}
	return a, p.Port
}

// validName tells whether name (below the zone) can be a DNS name: labels
// of 1 to 63 characters, at most max in all.
func validName(name string, max int) bool {
	if len(name) > max {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if len(label) == 0 || len(label) > 63 {
			return false
		}
	}
	return true
}
