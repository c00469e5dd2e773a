package changes

import (
	"context"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

// Builder keeps a plugin instance's snapshot current with the cache. One
// goroutine calls Publish and Apply; Mark is called from the cache's event
// delivery (the informers' goroutines).
type Builder interface {
	// Mark records a change, quickly and without blocking, and reports
	// whether it needs a rebuild.
	Mark(watchcache.Event) bool
	// Publish builds everything from the synced cache and publishes it.
	Publish()
	// Apply rebuilds what Mark recorded and publishes the result.
	Apply()
}

// Preparer is a Builder that can build its first snapshot while the cache
// syncs: Prepare applies what Mark recorded to a snapshot not yet
// published, so that Publish, once the cache has synced, has only the last
// changes left to apply. The first answer then comes when the watch has
// listed everything, not a full build later.
type Preparer interface {
	Prepare()
}

// Consumer is how a plugin instance uses the shared cache: acquire it for
// Resources, feed its events to a Builder, publish a first snapshot once the
// cache has synced and keep it current, and count the instance in Synced
// while it serves.
type Consumer struct {
	Config    watchcache.Config
	Resources watchcache.Resources
	// StartupTimeout bounds how long Start waits for the first snapshot.
	StartupTimeout time.Duration
	// Synced counts the instances serving a synced snapshot: Up when the
	// first snapshot is out, and the function it returns at Stop.
	Synced interface{ Up() (down func()) }
	// NewBuilder makes the instance's builder over the acquired cache.
	NewBuilder func(*watchcache.Handle) Builder
	// Published tells whether the first snapshot is out.
	Published func() bool
}

// Started is a running consumer.
type Started struct {
	Handle *watchcache.Handle
	// Stop ends the build loop, takes the instance out of Synced and
	// releases the cache; for the plugin's OnShutdown.
	Stop func()
	// Late is the reason the first snapshot was not published within the
	// startup timeout (the cache's sync error), nil otherwise: serving starts anyway (with SERVFAIL until the
	// cache syncs), and the plugin should say why in its log.
	Late error
}

// Start runs the consumer and waits up to StartupTimeout for its first
// snapshot. An error means the cache could not be acquired at all.
func (c Consumer) Start() (*Started, error) {
	var b Builder
	wake := make(chan struct{}, 1)
	h, unsubscribe, fresh, err := watchcache.AcquireSubscribed(c.Config, c.Resources, func(h *watchcache.Handle) func(watchcache.Event) {
		b = c.NewBuilder(h)
		return func(ev watchcache.Event) {
			if b.Mark(ev) {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	prep, _ := b.(Preparer)
	if !fresh {
		prep = nil // the objects listed before we subscribed were not marked: Publish builds them all
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var down func() // set by the loop once it has published
	go func() {
		defer close(done)
		if !c.prepareUntilSynced(ctx, h, prep, wake) {
			return
		}
		b.Publish()
		down = c.Synced.Up()
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				b.Apply()
			}
		}
	}()
	s := &Started{Handle: h, Stop: func() {
		unsubscribe()
		cancel()
		<-done
		if down != nil {
			down()
		}
		h.Release()
	}}
	s.Late = c.waitPublished(ctx, h)
	return s, nil
}

// syncPoll paces the wait for the cache's sync while nothing is marked;
// short, because the first snapshot waits for it (see syncTick in
// watchcache).
const syncPoll = 5 * time.Millisecond

// prepareUntilSynced waits for the cache to sync, letting prep (when not
// nil) apply changes as they arrive; false when ctx ends first.
func (c Consumer) prepareUntilSynced(ctx context.Context, h *watchcache.Handle, prep Preparer, wake <-chan struct{}) bool {
	if prep == nil {
		return h.WaitForSync(ctx, c.Resources) == nil
	}
	for !h.HasSynced(c.Resources) {
		select {
		case <-ctx.Done():
			return false
		case <-wake:
			prep.Prepare()
		case <-time.After(syncPoll):
		}
	}
	return true
}

// waitPublished waits for the first snapshot, up to the startup timeout.
func (c Consumer) waitPublished(ctx context.Context, h *watchcache.Handle) error {
	wait, cancel := context.WithTimeout(ctx, c.StartupTimeout)
	defer cancel()
	if err := h.WaitForSync(wait, c.Resources); err != nil {
		return err
	}
	for !c.Published() && wait.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
