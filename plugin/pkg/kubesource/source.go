// Package kubesource is what the Kubernetes schemas (kubeschema,
// multicluster) share on top of the watch cache: the feed of its events
// into their builders (a changes.Source), and the DNS decisions made of
// the cached objects, such as which endpoints of a service are served.
// The cache says what the API says; this package says what DNS makes of
// it, so that the serving core (dnszone) and the cache know nothing of
// each other.
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
	Mark(watchcache.Event) bool
}

// Source connects a plugin instance's builder to the shared cache.
type Source struct {
	Config    watchcache.Config
	Resources watchcache.Resources
	// NewBuilder makes the instance's builder over the acquired cache.
	NewBuilder func(*watchcache.Handle) Builder

	// Handle is the claim on the cache once Connect has run, for reads at
	// query time.
	Handle *watchcache.Handle
}

// Connect is changes.Consumer's Connect: it acquires the cache for the
// resources, subscribes the builder's Mark (before any informer starts, so
// that the builder sees an event for every object listed) and wakes the
// build loop on each change that needs a rebuild.
func (s *Source) Connect(wake func()) (*changes.Feed, error) {
	var b Builder
	h, unsubscribe, fresh, err := watchcache.AcquireSubscribed(s.Config, s.Resources, func(h *watchcache.Handle) func(watchcache.Event) {
		b = s.NewBuilder(h)
		return func(ev watchcache.Event) {
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
	h         *watchcache.Handle
	resources watchcache.Resources
}

func (s synced) Synced() bool { return s.h.HasSynced(s.resources) }

func (s synced) WaitSynced(ctx context.Context) error { return s.h.WaitForSync(ctx, s.resources) }
