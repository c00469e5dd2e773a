package mesosschema

import (
	"hash/maphash"
	"maps"
	"math"
	"net/netip"
	"reflect"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// incremental generates the records of each new state at the cost of
// what changed since the last one: it keeps, between polls, the records
// each framework and each running task contributes (a unit), keyed by a
// fingerprint of every input those records are made from, makes only the
// units whose fingerprint is new, and merges again only the names those
// units (and the units gone) touch. Agents, masters and the nameserver
// (the fixed unit: a few hundred agents at most) are made again every
// poll, as generate makes them.
//
// A full build adds records in the state's order, and two of its rules
// read what came before: an SRV record needs its target to have an
// address already, and a name's PTR ownership is taken by the last unit
// that claims it. The units' records equal the full build's only when no
// unit depends on another's: no SRV target or PTR claim a unit left out
// that another unit makes, and no name claimed by two units. Any state
// that breaks this is built whole by generate (and the next regular one
// merged whole again), so that the answers are always a full build's.
//
// Owned by the poll goroutine.
type incremental struct {
	o    *genOptions
	seed maphash.Seed
	// units are the units of the last state, by fingerprint; fixed is the
	// agents' and masters' unit.
	units map[uint64]*unit
	fixed *unit
	// owners are the fingerprints of the units that give each name records.
	owners map[string]map[uint64]struct{}
	// sets are the records of the last state, as published.
	sets map[string]*dnszone.Facts
	// tasks and skipped are the last state's counts.
	tasks, skipped int
	// whole: the last output was generate's (or there was none), so the
	// next is merged from every unit.
	whole bool
}

// unit is the records of one framework or one running task.
type unit struct {
	names map[string]*recordSet
	// missed are the names the unit wanted as an SRV target or claimed
	// PTR records of, but had not made itself.
	missed []string
	// claimed are the names the unit claims PTR records of.
	claimed []string
	// running is when the task's instance began to run, if known.
	running     time.Time
	instance    string
	tasks, skip int
	// refs is how many times the state holds this unit (a task listed
	// twice makes the same unit twice).
	refs int
}

func newIncremental(o *genOptions) *incremental {
	return &incremental{o: o, seed: maphash.MakeSeed(), units: map[uint64]*unit{},
		owners: map[string]map[uint64]struct{}{}, sets: map[string]*dnszone.Facts{}, whole: true}
}

// next returns the records of st: the names changed since the last state
// (nil for a name gone), or, when the state must be built whole, every
// name.
func (in *incremental) next(st *mesosstate.State) *generated {
	dirty := map[string]bool{}
	agents := in.refreshFixed(st, dirty)
	refs, added := in.collect(st, agents)
	in.update(refs, added, dirty)
	if in.irregular() {
		in.whole = true
		g := generate(st, in.o, nil)
		in.sets = maps.Clone(g.sets)
		g.names = len(g.sets)
		return g
	}
	if in.whole {
		in.whole = false
		return in.rebuild()
	}
	return in.delta(dirty, added)
}

// refreshFixed makes the fixed unit of st again, marking its names dirty
// when it changed, and returns the agents' addresses.
func (in *incremental) refreshFixed(st *mesosstate.State, dirty map[string]bool) map[string]netip.Addr {
	g := &generator{o: in.o, names: map[string]*recordSet{}, agents: map[string]netip.Addr{}}
	g.agentRecords(st)
	g.masterRecords(st)
	if in.o.nsName != "" {
		g.add(in.o.nsName, in.o.nsAddrs...)
	}
	if in.fixed != nil && reflect.DeepEqual(in.fixed.names, g.names) {
		return g.agents
	}
	if in.fixed != nil {
		in.unlink(0, in.fixed, dirty)
	}
	in.fixed = &unit{names: g.names, refs: 1}
	in.link(0, in.fixed, dirty)
	return g.agents
}

// collect fingerprints the units of st, making those not seen before.
func (in *incremental) collect(st *mesosstate.State, agents map[string]netip.Addr) (refs map[uint64]int, added map[uint64]*unit) {
	refs, added = map[uint64]int{}, map[uint64]*unit{}
	see := func(fp uint64, make func() *unit) {
		refs[fp]++
		if in.units[fp] == nil && added[fp] == nil {
			added[fp] = make()
		}
	}
	for i := range st.Frameworks {
		f := &st.Frameworks[i]
		label := mesosstate.FrameworkName(f.Name, in.o.rfc952)
		see(in.frameworkPrint(f, label), func() *unit { return in.frameworkUnit(f, label) })
		if label == "" {
			continue
		}
		for j := range f.Tasks {
			t := &f.Tasks[j]
			if !t.Running() {
				continue
			}
			a, ok := agents[t.SlaveID]
			see(in.taskPrint(t, label, a, ok), func() *unit { return in.taskUnit(t, label, agents) })
		}
	}
	return refs, added
}

// frameworkUnit is the scheduler's own records, or, for a framework with
// no name, the count of its running tasks skipped.
func (in *incremental) frameworkUnit(f *mesosstate.Framework, label string) *unit {
	if label == "" {
		return &unit{names: map[string]*recordSet{}, skip: running(f.Tasks)}
	}
	g := &generator{o: in.o, names: map[string]*recordSet{}}
	g.framework(&mesosstate.Framework{Name: f.Name, PID: f.PID, Hostname: f.Hostname})
	return newUnit(g)
}

func newUnit(g *generator) *unit {
	u := &unit{names: g.names, missed: g.missed, tasks: g.out.tasks, skip: g.out.skipped}
	for name, rs := range g.names {
		if rs.ptr.set {
			u.claimed = append(u.claimed, name)
		}
	}
	return u
}

// taskUnit is one running task's records.
func (in *incremental) taskUnit(t *mesosstate.Task, fw string, agents map[string]netip.Addr) *unit {
	g := &generator{o: in.o, names: map[string]*recordSet{}, agents: agents, out: generated{running: map[string]time.Time{}}}
	g.task(t, fw, nil)
	u := newUnit(g)
	for name, since := range g.out.running {
		u.instance, u.running = name, since
	}
	return u
}

// update replaces the units of the last state with those of the new one,
// marking dirty every name a unit that came or went gives records.
func (in *incremental) update(refs map[uint64]int, added map[uint64]*unit, dirty map[string]bool) {
	for fp, u := range in.units {
		if n := refs[fp]; n != u.refs {
			in.unlink(fp, u, dirty)
			if u.refs = n; n == 0 {
				delete(in.units, fp)
			} else {
				in.link(fp, u, dirty)
			}
		}
	}
	for fp, u := range added {
		u.refs = refs[fp]
		in.units[fp] = u
		in.link(fp, u, dirty)
	}
}

func (in *incremental) link(fp uint64, u *unit, dirty map[string]bool) {
	in.tasks += u.tasks * u.refs
	in.skipped += u.skip * u.refs
	for name := range u.names {
		o := in.owners[name]
		if o == nil {
			o = map[uint64]struct{}{}
			in.owners[name] = o
		}
		o[fp] = struct{}{}
		dirty[name] = true
	}
}

func (in *incremental) unlink(fp uint64, u *unit, dirty map[string]bool) {
	in.tasks -= u.tasks * u.refs
	in.skipped -= u.skip * u.refs
	for name := range u.names {
		if o := in.owners[name]; o != nil {
			delete(o, fp)
			if len(o) == 0 {
				delete(in.owners, name)
			}
		}
		dirty[name] = true
	}
}

// irregular tells whether the units' records may differ from a full
// build's (see incremental).
func (in *incremental) irregular() bool {
	for _, u := range in.units {
		for _, name := range u.missed {
			if in.owners[name] != nil {
				return true
			}
		}
		for _, name := range u.claimed {
			if len(in.owners[name]) > 1 && in.claimsDiffer(name) {
				return true
			}
		}
	}
	return false
}

// claimsDiffer tells whether units claim PTR records of name by
// different rules: then the last in the state's order wins. The same
// claim twice (a task listed twice) gives what either gives.
func (in *incremental) claimsDiffer(name string) bool {
	var first *ptrRule
	for fp := range in.owners[name] {
		r := &in.unitOf(fp).names[name].ptr
		switch {
		case !r.set:
		case first == nil:
			first = r
		case *first != *r:
			return true
		}
	}
	return false
}

func (in *incremental) unitOf(fp uint64) *unit {
	if fp == 0 {
		return in.fixed
	}
	return in.units[fp]
}

// merge is name's records, from every unit that gives it some (nil when
// none does, or the name cannot be a DNS name).
func (in *incremental) merge(name string) *dnszone.Facts {
	o := in.owners[name]
	if len(o) == 0 || !validName(name, in.o.maxName) {
		return nil
	}
	var all recordSet
	for fp := range o {
		rs := in.unitOf(fp).names[name]
		all.addrs = append(all.addrs, rs.addrs...)
		all.srvs = append(all.srvs, rs.srvs...)
		if rs.ptr.set {
			all.ptr = rs.ptr
		}
	}
	return dnszone.NewRecords(name, all.addrs, all.srvs, all.ptr.fn())
}

// rebuild merges every name.
func (in *incremental) rebuild() *generated {
	in.sets = make(map[string]*dnszone.Facts, len(in.owners))
	g := &generated{running: map[string]time.Time{}, tasks: in.tasks, skipped: in.skipped}
	for name := range in.owners {
		if set := in.merge(name); set != nil {
			in.sets[name] = set
		}
	}
	for _, u := range in.units {
		if u.instance != "" {
			g.running[u.instance] = u.running
		}
	}
	g.sets, g.names = maps.Clone(in.sets), len(in.sets)
	return g
}

// delta merges the dirty names, and lists those whose records changed.
func (in *incremental) delta(dirty map[string]bool, added map[uint64]*unit) *generated {
	g := &generated{sets: map[string]*dnszone.Facts{}, running: map[string]time.Time{}, tasks: in.tasks, skipped: in.skipped, partial: true}
	for name := range dirty {
		set, prev := in.merge(name), in.sets[name]
		switch {
		case set == nil && prev != nil:
			delete(in.sets, name)
			g.sets[name] = nil
		case set != nil && (prev == nil || !prev.Equal(set)):
			in.sets[name] = set
			g.sets[name] = set
		}
	}
	for _, u := range added {
		if u.instance != "" {
			g.running[u.instance] = u.running
		}
	}
	g.names = len(in.sets)
	return g
}

// frameworkPrint is the fingerprint of a framework's own records.
func (in *incremental) frameworkPrint(f *mesosstate.Framework, label string) uint64 {
	var h maphash.Hash
	h.SetSeed(in.seed)
	str(&h, "framework", f.Name, label, f.PID, f.Hostname)
	if label == "" {
		num(&h, uint64(running(f.Tasks)))
	}
	return nonzero(h.Sum64())
}

// taskPrint is the fingerprint of every input of a task's records: the
// task, its framework's label and its agent's address.
func (in *incremental) taskPrint(t *mesosstate.Task, fw string, agent netip.Addr, known bool) uint64 {
	var h maphash.Hash
	h.SetSeed(in.seed)
	str(&h, "task", fw, t.ID, t.Name, t.FrameworkID, t.SlaveID, t.State, t.Resources.Ports)
	b, _ := agent.MarshalBinary()
	h.Write(b)
	flag(&h, known)
	num(&h, uint64(len(t.Statuses)))
	for i := range t.Statuses {
		status(&h, &t.Statuses[i])
	}
	flag(&h, t.Discovery != nil)
	if d := t.Discovery; d != nil {
		str(&h, d.Visibility, d.Name)
		num(&h, uint64(len(d.Ports.Ports)))
		for _, p := range d.Ports.Ports {
			num(&h, uint64(p.Number))
			str(&h, p.Name, p.Protocol)
			flag(&h, p.Labels != nil)
			if p.Labels != nil {
				labels(&h, p.Labels.Labels)
			}
		}
	}
	return nonzero(h.Sum64())
}

func status(h *maphash.Hash, s *mesosstate.Status) {
	str(h, s.State)
	num(h, math.Float64bits(s.Timestamp))
	labels(h, s.Labels)
	flag(h, s.ContainerStatus != nil)
	if s.ContainerStatus == nil {
		return
	}
	num(h, uint64(len(s.ContainerStatus.NetworkInfos)))
	for _, ni := range s.ContainerStatus.NetworkInfos {
		str(h, ni.Name, ni.IPAddress)
		num(h, uint64(len(ni.IPAddresses)))
		for _, a := range ni.IPAddresses {
			str(h, a.IPAddress, a.Protocol)
		}
	}
}

func labels(h *maphash.Hash, ls []mesosstate.Label) {
	num(h, uint64(len(ls)))
	for _, l := range ls {
		str(h, l.Key, l.Value)
	}
}

// str writes each string with its length, so that no two lists of
// strings write the same bytes.
func str(h *maphash.Hash, ss ...string) {
	for _, s := range ss {
		num(h, uint64(len(s)))
		h.WriteString(s)
	}
}

func num(h *maphash.Hash, n uint64) {
	var b [8]byte
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	h.Write(b[:])
}

func flag(h *maphash.Hash, b bool) {
	if b {
		h.WriteByte(1)
	} else {
		h.WriteByte(0)
	}
}

// nonzero keeps 0 for the fixed unit.
func nonzero(fp uint64) uint64 { return max(fp, 1) }
