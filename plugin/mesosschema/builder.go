package mesosschema

import (
	"sync"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
)

// builder turns the records of each new state into a snapshot: it
// changes only the names whose records differ from the published ones,
// and publishes nothing (no new snapshot, no new serial) when none does.
// The poller offers a state's records and wakes the build loop; the loop
// calls Publish once, then Apply.
type builder struct {
	m *Mesosschema

	mu sync.Mutex
	// next are the records of the newest state not yet applied, and when
	// it was fetched (the programming latency of a name whose source has
	// no time of its own).
	next    *generated
	fetched time.Time
	// applied is when the state published last was fetched; owned by the
	// build loop.
	applied time.Time
}

// offer hands over the records of a new state; an older one not yet
// applied is dropped (the newer covers it).
func (b *builder) offer(g *generated, fetched time.Time) {
	b.mu.Lock()
	b.next, b.fetched = g, fetched
	b.mu.Unlock()
}

func (b *builder) take() (*generated, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g, at := b.next, b.fetched
	b.next = nil
	return g, at
}

// Publish builds the first snapshot from the first state (changes.Builder).
func (b *builder) Publish() {
	g, at := b.take()
	if g == nil {
		g = &generated{} // not reached: the source is synced once a state is offered
	}
	e := dnszone.NewEdit(changes.NextSerial(0))
	for _, set := range g.sets {
		e.Put(set)
		e.AddPTRs(set)
	}
	b.m.Publish(e.Done())
	b.applied = at
	b.m.setCounts(g)
}

// Apply publishes what the newest state changed (changes.Builder).
func (b *builder) Apply() {
	g, at := b.take()
	if g == nil {
		return
	}
	old := b.m.Snapshot()
	changed, gone := diff(old, g.sets)
	b.m.setCounts(g)
	if len(changed) == 0 && len(gone) == 0 {
		metrics.unchangedStates.Inc()
		return
	}
	e := old.Edit(changes.NextSerial(old.Serial()))
	for _, set := range changed {
		e.UpdatePTRs(e.Service(set.Key()), set)
		e.Put(set)
	}
	for _, set := range gone {
		e.RemovePTRs(set)
		e.Remove(set.Key())
	}
	b.m.Publish(e.Done())
	b.observe(g, changed)
	b.applied = at
}

// diff lists the record sets of next that are new or differ from old's,
// and old's that next has not.
func diff[M ~map[string]*dnszone.Facts](old *dnszone.Snapshot, next M) (changed, gone []*dnszone.Facts) {
	for key, set := range next {
		if prev := old.Service(key); prev == nil || !prev.Equal(set) {
			changed = append(changed, set)
		}
	}
	old.Each(func(prev *dnszone.Facts) {
		if next[prev.Key()] == nil {
			gone = append(gone, prev)
		}
	})
	return changed, gone
}

// observe records the programming latency of a change: for each task
// instance that came or changed, from its TASK_RUNNING status (or from when
// the previous state was fetched, if that is later: the master did not
// have it then); for a change with no new instance (tasks gone, agents,
// masters, frameworks), from when the previous state was fetched, the
// latest the master can have made it.
func (b *builder) observe(g *generated, changed []*dnszone.Facts) {
	instances := 0
	for _, set := range changed {
		if since, ok := g.running[set.Key()]; ok {
			metrics.ObserveProgrammed("task", later(since, b.applied))
			instances++
		}
	}
	if instances == 0 && !b.applied.IsZero() {
		metrics.ObserveProgrammed("other", b.applied)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
