package handover

import (
	"context"
	"net/netip"
	"os"
	"time"
)

// Timing of the watch, from the final shutdown to the process's exit.
const (
	// pollEvery: how often /proc/net/udp is read, for a successor that
	// binds after this process was told to stop, and for one that goes
	// away (then every query the kernel gives it is lost until the
	// handover is taken back).
	pollEvery = 20 * time.Millisecond
	// reprobeEvery: how often a listener is probed again, refused or
	// handed over (a successor that is still bound but no longer reads).
	reprobeEvery = 500 * time.Millisecond
)

// Reasons a listener is not handed over, the label of refused_total.
const (
	reasonNoKey      = "no_key"     // this process has no key: it trusts nobody
	reasonUID        = "uid"        // a socket beside it belongs to another user
	reasonUnverified = "unverified" // a socket beside it proved no key
)

// watch hands this process's UDP listeners over, once told to shut down
// for good, to a proven successor, and takes them back if it goes.
type watch struct {
	key []byte
	uid uint32
	// bound reads the network namespace's UDP sockets (boundUDP).
	bound func() (map[netip.AddrPort][]procSocket, error)
	// probe proves which inodes on an address belong to key holders
	// (proven).
	probe func(ctx context.Context, key []byte, addr netip.AddrPort, want []uint64) map[uint64]bool
}

func newWatch(key []byte) *watch {
	return &watch{key: key, uid: uint32(os.Geteuid()), bound: boundUDP, probe: proven} // #nosec G115 -- a uid
}

// listenerState is what the watch knows of one of its listeners.
type listenerState struct {
	socket
	handed    bool
	refused   string    // the last reason counted, so a reason is counted once per listener until it changes
	nextProbe time.Time // no probe round before this
}

// run watches socks until ctx ends (in CoreDNS, until the process exits
// at the end of its lameduck).
func (w *watch) run(ctx context.Context, socks []socket) {
	states := make([]*listenerState, len(socks))
	ours := map[uint64]bool{}
	for i, s := range socks {
		states[i] = &listenerState{socket: s}
		ours[s.Inode] = true
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		bound, err := w.bound()
		if err != nil {
			log.Warning(err)
			return
		}
		for _, st := range states {
			w.step(ctx, st, bound, ours)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// step moves one listener towards what its neighbours warrant.
func (w *watch) step(ctx context.Context, st *listenerState, bound map[netip.AddrPort][]procSocket, ours map[uint64]bool) {
	if !st.StillOurs() {
		return // closed by the server: nothing of ours to move
	}
	cands := candidates(st.socket, bound, ours)
	now := time.Now()
	switch {
	case st.handed && len(cands) == 0:
		w.takeBack(st, "the process it was handed to is gone")
	case len(cands) == 0 || now.Before(st.nextProbe):
	default:
		st.nextProbe = now.Add(reprobeEvery)
		reason := w.judge(ctx, st.socket, cands)
		switch {
		case reason == "" && !st.handed:
			w.handOver(st)
		case reason != "" && st.handed:
			w.takeBack(st, "the process it was handed to no longer proves the key ("+reason+")")
		case reason != "" && reason != st.refused:
			st.refused = reason
			refused.WithLabelValues(reason).Inc()
			log.Infof("%s not handed over: %s", st.Local, reason)
		}
	}
}

// judge says why s must not be handed over to cands, or "" if it may:
// every one of them is of our UID and proven a key holder's, so none is a
// stranger's that would lose the queries the kernel gives it.
func (w *watch) judge(ctx context.Context, s socket, cands []procSocket) string {
	if w.key == nil {
		return reasonNoKey
	}
	want := make([]uint64, len(cands))
	for i, c := range cands {
		if c.uid != w.uid {
			return reasonUID
		}
		want[i] = c.inode
	}
	got := w.probe(ctx, w.key, s.Local, want)
	for _, n := range want {
		if !got[n] {
			return reasonUnverified
		}
	}
	return ""
}

func (w *watch) handOver(st *listenerState) {
	if err := connectSelf(st.socket); err != nil {
		log.Warningf("could not hand %s over: %v", st.Local, err)
		return
	}
	st.handed, st.refused = true, ""
	handedOver.Inc()
	log.Infof("%s handed over to its proven successor", st.Local)
}

func (w *watch) takeBack(st *listenerState, why string) {
	if err := disconnect(st.socket); err != nil {
		log.Warningf("could not take %s back: %v", st.Local, err)
		return
	}
	st.handed = false
	takenBack.Inc()
	log.Infof("%s taken back: %s", st.Local, why)
}
