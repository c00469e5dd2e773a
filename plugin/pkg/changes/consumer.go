package changes

import (
	"context"
	"errors"
	"time"
)

// Builder keeps a plugin instance's snapshot current with its source. One
// goroutine calls Publish and Apply; how changes are marked (Mark) is the
// source's business: watch events for the Kubernetes schemas
// (kubesource), a polled state for Mesos.
type Builder interface {
	// Publish builds everything from the synced source and publishes it.
	Publish()
	// Apply rebuilds what was marked and publishes the result.
	Apply()
}

// Preparer is a Builder that can build its first snapshot while the source
// syncs: Prepare applies what was marked to a snapshot not yet published,
// so that Publish, once the source has synced, has only the last changes
// left to apply. The first answer then comes when the watch has listed
// everything, not a full build later.
type Preparer interface {
	Prepare()
}

// Source is where a schema's facts come from, as the build loop sees it:
// the Kubernetes watch cache, a Mesos master. It marks changes in the
// builder it was connected to and wakes the loop.
type Source interface {
	// Synced tells whether the source holds a complete first state: the
	// first snapshot can be built.
	Synced() bool
	// WaitSynced blocks until Synced or until ctx ends; its error then
	// says what is missing.
	WaitSynced(ctx context.Context) error
}

// Feed is a source connected to a builder, for Consumer.
type Feed struct {
	Source  Source
	Builder Builder
	// Fresh: the builder has been told of everything the source holds
	// from the start, so that Prepare can build the first snapshot while
	// the source syncs (a source another consumer started is not fresh).
	Fresh bool
	// Stop disconnects the builder from the source; called once the
	// build loop has ended.
	Stop func()
	// Awaited says what the first snapshot waits for, as the log puts it
	// when serving starts without it: "the API server answered".
	Awaited string
}

// Consumer is how a plugin instance runs its build loop: connect a builder
// to its source, publish a first snapshot once the source has synced,
// keep it current, and count the instance in Synced while it serves.
type Consumer struct {
	// StartupTimeout bounds how long Start waits for the first snapshot.
	StartupTimeout time.Duration
	// Synced counts the instances serving a synced snapshot: Up when the
	// first snapshot is out, and the function it returns at Stop.
	Synced interface{ Up() (down func()) }
	// Published tells whether the first snapshot is out.
	Published func() bool
	// Connect connects the builder to its source. The source calls wake,
	// which never blocks, whenever the builder has marks to apply.
	Connect func(wake func()) (*Feed, error)
}

// Started is a running consumer.
type Started struct {
	// Stop ends the build loop, takes the instance out of Synced and
	// disconnects from the source; for the plugin's OnShutdown.
	Stop func()
	// Late is the reason the first snapshot was not published within the
	// startup timeout (the source's sync error), nil otherwise: serving
	// starts anyway (with SERVFAIL until the source syncs), and the plugin
	// should say why in its log.
	Late error
	// Awaited is the feed's: what the first snapshot waits for.
	Awaited string
}

// errNotConnected: Connect returned no feed and no error.
var errNotConnected = errors.New("the source gave no feed")

// Start runs the consumer and waits up to StartupTimeout for its first
// snapshot. An error means the source could not be connected at all.
func (c Consumer) Start() (*Started, error) {
	wake := make(chan struct{}, 1)
	feed, err := c.Connect(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	if feed == nil {
		return nil, errNotConnected
	}
	prep, _ := feed.Builder.(Preparer)
	if !feed.Fresh {
		prep = nil // what the source held before we connected was not marked: Publish builds it all
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var down func() // set by the loop once it has published
	go func() {
		defer close(done)
		if !prepareUntilSynced(ctx, feed.Source, prep, wake) {
			return
		}
		feed.Builder.Publish()
		down = c.Synced.Up()
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				feed.Builder.Apply()
			}
		}
	}()
	s := &Started{Awaited: feed.Awaited, Stop: func() {
		cancel()
		<-done
		if down != nil {
			down()
		}
		feed.Stop()
	}}
	s.Late = c.waitPublished(ctx, feed.Source)
	return s, nil
}

// syncPoll paces the wait for the source's sync while nothing is marked;
// short, because the first snapshot waits for it.
const syncPoll = 5 * time.Millisecond

// prepareUntilSynced waits for the source to sync, letting prep (when not
// nil) apply changes as they arrive; false when ctx ends first.
func prepareUntilSynced(ctx context.Context, src Source, prep Preparer, wake <-chan struct{}) bool {
	if prep == nil {
		return src.WaitSynced(ctx) == nil
	}
	for !src.Synced() {
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
func (c Consumer) waitPublished(ctx context.Context, src Source) error {
	wait, cancel := context.WithTimeout(ctx, c.StartupTimeout)
	defer cancel()
	if err := src.WaitSynced(wait); err != nil {
		return err
	}
	for !c.Published() && wait.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
