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
	defer b.mu.Unlock()
	if g.partial && b.next != nil {
		g = fold(b.next, g)
	}
	b.next, b.fetched = g, fetched
}

// fold lays the changes of g, a partial state's, over those of older, the
// state before it not yet applied: together they are what both changed.
// older's maps belong to the builder once offered.
func fold(older, g *generated) *generated {
	for name, set := range g.sets {
		if set == nil && !older.partial {
			delete(older.sets, name)
		} else {
			older.sets[name] = set
		}
	}
	for name, since := range g.running {
		older.running[name] = since
	}
	older.tasks, older.skipped, older.names = g.tasks, g.skipped, g.names
	return older
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
		if set != nil {
			e.Put(set)
			e.AddPTRs(set)
		}
	}
	b.m.Publish(e.Done())
	b.applied = at
	b.setCounts(g)
}

// Apply publishes what the newest state changed (changes.Builder).
func (b *builder) Apply() {
	g, at := b.take()
	if g == nil {
		return
	}
	old := b.m.Snapshot()
	var changed, gone []*dnszone.Facts
	if g.partial {
		changed, gone = diffNames(old, g.sets)
	} else {
		changed, gone = diff(old, g.sets)
	}
	b.setCounts(g)
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

// diffNames is diff for the names of a partial state only: those it
// lists, nil for a name gone.
func diffNames(old *dnszone.Snapshot, next map[string]*dnszone.Facts) (changed, gone []*dnszone.Facts) {
	for key, set := range next {
		prev := old.Service(key)
		switch {
		case set == nil && prev != nil:
			gone = append(gone, prev)
		case set != nil && (prev == nil || !prev.Equal(set)):
			changed = append(changed, set)
		}
	}
	return changed, gone
}

// setCounts sets the gauges of the state's counts; a partial state counts
// its names without listing them.
func (b *builder) setCounts(g *generated) {
	if !g.partial {
		b.m.setCounts(g)
		return
	}
	metrics.tasks.Set(float64(g.tasks))
	metrics.skippedTasks.Set(float64(g.skipped))
	metrics.names.Set(float64(g.names))
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
