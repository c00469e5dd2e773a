package mesosschema

import (
	"encoding/binary"
	"hash/maphash"
	"maps"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strings"
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
	// owners are the fingerprints of the units that give each name records
	// (a slice: most names have one, and a map each costs more than the
	// records).
	owners map[string][]uint64
	// sets are the records of the last state, as published.
	sets map[string]*dnszone.Facts
	// missedBy counts the units that missed each name (unit.missed); bad
	// are the names that make the state irregular (see irregular).
	missedBy map[string]int
	bad      map[string]bool
	// tasks and skipped are the last state's counts.
	tasks, skipped int
	// buf is the fingerprints' scratch space.
	buf []byte
	// whole: the last output was generate's (or there was none), so the
	// next is merged from every unit.
	whole bool
}

// unit is the records of one framework or one running task.
type unit struct {
	// names are the unit's records, by name in order.
	names []unitName
	// missed are the names the unit wanted as an SRV target or claimed
	// PTR records of, but had not made itself.
	missed []string
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
		owners: map[string][]uint64{}, missedBy: map[string]int{}, bad: map[string]bool{}, sets: map[string]*dnszone.Facts{}, whole: true}
}

// next returns the records of st: the names changed since the last state
// (nil for a name gone), or, when the state must be built whole, every
// name.
func (in *incremental) next(st *mesosstate.State) *generated {
	dirty := map[string]bool{}
	agents := in.refreshFixed(st, dirty)
	refs, added := in.collect(st, agents)
	in.update(refs, added, dirty)
	if in.irregular(dirty) {
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
	names := unitNames(g.names)
	if in.fixed != nil && reflect.DeepEqual(in.fixed.names, names) {
		return g.agents
	}
	if in.fixed != nil {
		in.unlink(0, in.fixed, dirty)
	}
	in.fixed = &unit{names: names, refs: 1}
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
		return &unit{skip: running(f.Tasks)}
	}
	g := &generator{o: in.o, names: map[string]*recordSet{}}
	g.framework(&mesosstate.Framework{Name: f.Name, PID: f.PID, Hostname: f.Hostname})
	return newUnit(g)
}

func newUnit(g *generator) *unit {
	return &unit{names: unitNames(g.names), missed: g.missed, tasks: g.out.tasks, skip: g.out.skipped}
}

// unitName is one name of a unit with its records.
type unitName struct {
	name string
	recordSet
}

// unitNames is a generator's names in order.
func unitNames(names map[string]*recordSet) []unitName {
	out := make([]unitName, 0, len(names))
	for name, rs := range names {
		out = append(out, unitName{name, *rs})
	}
	slices.SortFunc(out, func(a, b unitName) int { return strings.Compare(a.name, b.name) })
	return out
}

// set is the unit's records of name (nil when it has none).
func (u *unit) set(name string) *recordSet {
	for i := range u.names {
		if u.names[i].name == name {
			return &u.names[i].recordSet
		}
	}
	return nil
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
	for i := range u.names {
		name := u.names[i].name
		in.owners[name] = append(in.owners[name], fp)
		dirty[name] = true
	}
	for _, name := range u.missed {
		in.missedBy[name]++
		dirty[name] = true
	}
}

func (in *incremental) unlink(fp uint64, u *unit, dirty map[string]bool) {
	in.tasks -= u.tasks * u.refs
	in.skipped -= u.skip * u.refs
	for i := range u.names {
		name := u.names[i].name
		o := in.owners[name]
		if j := slices.Index(o, fp); j >= 0 {
			o[j] = o[len(o)-1]
			o = o[:len(o)-1]
		}
		if len(o) == 0 {
			delete(in.owners, name)
		} else {
			in.owners[name] = o
		}
		dirty[name] = true
	}
	for _, name := range u.missed {
		if in.missedBy[name]--; in.missedBy[name] == 0 {
			delete(in.missedBy, name)
		}
		dirty[name] = true
	}
}

// irregular tells whether the units' records may differ from a full
// build's (see incremental): a name some unit missed that another makes,
// or a name whose PTR records units claim by different rules. Only the
// dirty names can have become or stopped being such names.
func (in *incremental) irregular(dirty map[string]bool) bool {
	for name := range dirty {
		o := in.owners[name]
		if (in.missedBy[name] > 0 && len(o) > 0) || (len(o) > 1 && in.claimsDiffer(name)) {
			in.bad[name] = true
		} else {
			delete(in.bad, name)
		}
	}
	return len(in.bad) > 0
}

// claimsDiffer tells whether units claim PTR records of name by
// different rules: then the last in the state's order wins. The same
// claim twice (a task listed twice) gives what either gives.
func (in *incremental) claimsDiffer(name string) bool {
	var first *ptrRule
	for _, fp := range in.owners[name] {
		r := &in.unitOf(fp).set(name).ptr
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
	for _, fp := range o {
		rs := in.unitOf(fp).set(name)
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
	h := printer{in.buf[:0]}
	h.str("framework", f.Name, label, f.PID, f.Hostname)
	if label == "" {
		h.num(uint64(running(f.Tasks)))
	}
	return in.sum(h)
}

// sum hashes what a printer wrote, keeping its buffer for the next.
func (in *incremental) sum(h printer) uint64 {
	in.buf = h.b
	return max(maphash.Bytes(in.seed, h.b), 1) // 0 is the fixed unit's
}

// taskPrint is the fingerprint of every input of a task's records: the
// task, its framework's label and its agent's address.
func (in *incremental) taskPrint(t *mesosstate.Task, fw string, agent netip.Addr, known bool) uint64 {
	h := printer{in.buf[:0]}
	h.str("task", fw, t.ID, t.Name, t.FrameworkID, t.SlaveID, t.State, t.Resources.Ports)
	h.b = agent.AppendTo(h.b) // text without bytes 0 and 1: the flag after it stays apart
	h.flag(known)
	h.num(uint64(len(t.Statuses)))
	for i := range t.Statuses {
		h.status(&t.Statuses[i])
	}
	h.flag(t.Discovery != nil)
	if d := t.Discovery; d != nil {
		h.str(d.Visibility, d.Name)
		h.num(uint64(len(d.Ports.Ports)))
		for _, p := range d.Ports.Ports {
			h.num(uint64(p.Number))
			h.str(p.Name, p.Protocol)
			h.flag(p.Labels != nil)
			if p.Labels != nil {
				h.labels(p.Labels.Labels)
			}
		}
	}
	return in.sum(h)
}

// printer writes a unit's inputs out to be hashed at once (a hash fed
// field by field costs more than the bytes).
type printer struct{ b []byte }

func (h *printer) status(s *mesosstate.Status) {
	h.str(s.State)
	h.num(math.Float64bits(s.Timestamp))
	h.labels(s.Labels)
	h.flag(s.ContainerStatus != nil)
	if s.ContainerStatus == nil {
		return
	}
	h.num(uint64(len(s.ContainerStatus.NetworkInfos)))
	for _, ni := range s.ContainerStatus.NetworkInfos {
		h.str(ni.Name, ni.IPAddress)
		h.num(uint64(len(ni.IPAddresses)))
		for _, a := range ni.IPAddresses {
			h.str(a.IPAddress, a.Protocol)
		}
	}
}

func (h *printer) labels(ls []mesosstate.Label) {
	h.num(uint64(len(ls)))
	for _, l := range ls {
		h.str(l.Key, l.Value)
	}
}

// str writes each string with its length, so that no two lists of
// strings write the same bytes.
func (h *printer) str(ss ...string) {
	for _, s := range ss {
		h.num(uint64(len(s)))
		h.b = append(h.b, s...)
	}
}

func (h *printer) num(n uint64) { h.b = binary.LittleEndian.AppendUint64(h.b, n) }

func (h *printer) flag(b bool) {
	if b {
		h.b = append(h.b, 1)
	} else {
		h.b = append(h.b, 0)
	}
}
