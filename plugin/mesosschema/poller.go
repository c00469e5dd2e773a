package mesosschema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// poller is mesosschema's source of facts (a changes.Source): it fetches
// the leading master's state every refresh interval (and at once when
// ZooKeeper names a new leader), and offers the records of each new state
// to the builder. The last good state is kept through every failure: a
// master that is down, slow or answers a truncated or malformed state
// leaves the zone as it was.
type poller struct {
	m      *Mesosschema
	client *mesosmaster.Client
	b      *builder
	wake   func()

	// emptied counts the polls in a row whose state had no agent while the
	// zone served some (see holdEmpty); held is that state, which the
	// client may then report unchanged. Owned by the poll goroutine.
	emptied int
	held    *mesosstate.State
	// dec reads each state at the cost of what changed since the last
	// (the tasks and agents of the same text are not decoded again), and
	// inc makes its records at the cost of what changed (nil until the
	// first state). Owned by the poll goroutine.
	dec *mesosstate.Decoder
	inc *incremental

	// first is closed once a state has been offered; lastErr is why none
	// has, while it is open.
	first     chan struct{}
	firstOnce sync.Once
	lastErr   atomic.Pointer[error]
	// outage is when the masters stopped answering; zero while they
	// answer. Owned by the poll goroutine.
	outage time.Time

	// state is the last good state, kept only for the HTTP interface's
	// /v1/enumerate (nil without it).
	state atomic.Pointer[mesosstate.State]
	// stateSeq counts the states stored, after each: what /v1/enumerate's
	// answer is built from, without keeping the state itself alive.
	stateSeq atomic.Uint64

	cancel context.CancelFunc
	done   chan struct{}
}

// holdPolls is how many polls in a row a state without any agent is held
// back while the zone serves agents. A newly elected master lists no agent
// until they register again (seconds to minutes): taking its state at once
// would empty the zone. A cluster really emptied is served empty after
// these polls.
const holdPolls = 3

func newPoller(m *Mesosschema, client *mesosmaster.Client) *poller {
	p := &poller{m: m, client: client, dec: mesosstate.NewDecoder(), first: make(chan struct{})}
	p.b = &builder{m: m}
	return p
}

// connect is changes.Consumer's Connect: start polling, waking the build
// loop with each new state.
func (p *poller) connect(wake func()) (*changes.Feed, error) {
	if err := p.client.Start(); err != nil {
		return nil, fmt.Errorf("start the master client: %w", err)
	}
	p.wake = wake
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go p.run(ctx)
	return &changes.Feed{Source: p, Builder: p.b, Stop: p.stop, Awaited: "a master gave a good state"}, nil
}

// stop ends the polls and the client; safe to call more than once.
func (p *poller) stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	<-p.done
	p.client.Stop()
	p.cancel = nil
}

// Synced implements changes.Source: a first state has been read.
func (p *poller) Synced() bool {
	select {
	case <-p.first:
		return true
	default:
		return false
	}
}

// errNoState: no master has given a good state yet.
var errNoState = errors.New("no state from any master yet")

// WaitSynced implements changes.Source.
func (p *poller) WaitSynced(ctx context.Context) error {
	select {
	case <-p.first:
		return nil
	case <-ctx.Done():
		if err := p.lastErr.Load(); err != nil {
			return fmt.Errorf("%w: %w", errNoState, *err)
		}
		return errNoState
	}
}

// run polls until ctx ends.
func (p *poller) run(ctx context.Context) {
	defer close(p.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-p.client.LeaderChanged(): // nil without ZooKeeper: never ready
			if !timer.Stop() {
				<-timer.C
			}
		}
		p.poll(ctx)
		timer.Reset(p.m.refresh)
	}
}

// poll fetches the state once and offers its records if it changed. A
// state served in the same bytes as the last one accepted is neither
// decompressed nor decoded (the client recognises it).
func (p *poller) poll(ctx context.Context) {
	start := time.Now()
	var st *mesosstate.State
	res, err := p.client.Fetch(ctx, func(body io.Reader, master string) (string, error) {
		st = nil
		s, err := p.dec.Decode(body)
		if err != nil {
			return "", err
		}
		leader, err := leaderAddr(s)
		if err != nil {
			return "", err
		}
		st = s
		metrics.stateBytes.Set(float64(p.dec.Stats().Bytes))
		return leader, nil
	})
	metrics.pollSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		if ctx.Err() == nil {
			p.failed(err)
		}
		return
	}
	p.answered(res.Master)
	if res.Unchanged && p.held != nil {
		st = p.held // the state held back, again
	}
	switch {
	case res.Unchanged && st == nil:
		metrics.polls.WithLabelValues("unchanged").Inc()
	case p.holdEmpty(st):
		metrics.polls.WithLabelValues("held").Inc()
	default:
		metrics.polls.WithLabelValues("changed").Inc()
		p.offer(st, start)
	}
}

// offer hands the records of st, fetched at start, to the build loop.
func (p *poller) offer(st *mesosstate.State, start time.Time) {
	if p.inc == nil {
		p.inc = newIncremental(&p.m.gen)
	}
	p.b.offer(p.inc.next(st), start)
	if p.m.keepState {
		p.state.Store(st)
		p.stateSeq.Add(1)
	}
	p.firstOnce.Do(func() { close(p.first) })
	p.wake()
}

// holdEmpty tells whether st, a state with no agent, is held back: the
// zone serves agents, and it is the first holdPolls of such states in a
// row (see holdPolls).
func (p *poller) holdEmpty(st *mesosstate.State) bool {
	if len(st.Slaves) > 0 || !p.Synced() || p.m.Snapshot() == nil || p.m.Snapshot().Service("slave") == nil {
		p.emptied, p.held = 0, nil
		return false
	}
	p.emptied++
	if p.emptied == 1 {
		log.Warningf("the leader's state lists no agent: keeping the last good state for up to %d polls (a new leader lists agents only once they register again)", holdPolls)
	}
	if p.emptied > holdPolls {
		p.held = nil
		return false
	}
	p.held = st
	return true
}

// failed notes a poll that found no good state: logged once per outage,
// the zone kept as it was.
func (p *poller) failed(err error) {
	metrics.polls.WithLabelValues("error").Inc()
	metrics.reachable.Set(0)
	// One line: the failures of each master are joined with newlines.
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	if errors.Is(err, mesosmaster.ErrBodyTooLarge) {
		msg += " (max_state_size " + strconv.FormatInt(p.client.MaxBodySize(), 10) + " bytes: raise it if the cluster's state is that large)"
	}
	err = errors.New(msg)
	p.lastErr.Store(&err)
	p.emptied, p.held = 0, nil // a hold counts agentless states in a row
	if !p.outage.IsZero() {
		return
	}
	p.outage = time.Now()
	if p.Synced() {
		log.Warningf("no master gives a good state, answering from the last good one until one does: %v", err)
	} else {
		log.Warningf("no master gives a good state yet (SERVFAIL until one does): %v", err)
	}
}

// answered notes a poll that got a good state from master.
func (p *poller) answered(master string) {
	metrics.reachable.Set(1)
	if p.outage.IsZero() {
		return
	}
	log.Infof("master %s gives a good state again, after %s", master, time.Since(p.outage).Round(time.Second))
	p.outage = time.Time{}
}

// leaderAddr is the host:port of the leader st names: what the client
// compares with the master that served st.
func leaderAddr(st *mesosstate.State) (string, error) {
	pid, err := mesosstate.ParsePID(st.Leader)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(pid.Host, strconv.Itoa(int(pid.Port))), nil
}
