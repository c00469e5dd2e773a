package kubesource

import (
	"context"

	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

// Builder is a builder fed by the watch cache: Mark is called for every
// event, from the informers' goroutines.
type Builder interface {
	changes.Builder
	// Mark records a change, quickly and without blocking, and reports
	// whether it needs a rebuild.
	Mark(Event) bool
}

// Source connects a plugin instance's builder to the shared cache.
type Source struct {
	Config    Config
	Resources Resources
	// NewBuilder makes the instance's builder over the acquired cache.
	NewBuilder func(*Handle) Builder

	// Handle is the claim on the cache once Connect has run, for reads at
	// query time.
	Handle *Handle
}

// Connect is changes.Consumer's Connect: it acquires the cache for the
// resources, subscribes the builder's Mark (before any informer starts, so
// that the builder sees an event for every object listed) and wakes the
// build loop on each change that needs a rebuild.
func (s *Source) Connect(wake func()) (*changes.Feed, error) {
	var b Builder
	h, unsubscribe, fresh, err := watchcache.AcquireSubscribed(s.Config, s.Resources, func(h *Handle) func(Event) {
		b = s.NewBuilder(h)
		return func(ev Event) {
			if b.Mark(ev) {
				wake()
			}
		}
	})
	if err != nil {
		return nil, err
	}
	s.Handle = h
	return &changes.Feed{
		Source:  synced{h, s.Resources},
		Builder: b,
		Fresh:   fresh,
		Stop:    func() { unsubscribe(); h.Release() },
		Awaited: "the API server answered",
	}, nil
}

// synced is the cache's sync of some resources, as a changes.Source.
type synced struct {
	h         *Handle
	resources Resources
}

func (s synced) Synced() bool { return s.h.HasSynced(s.resources) }

func (s synced) WaitSynced(ctx context.Context) error { return s.h.WaitForSync(ctx, s.resources) }
