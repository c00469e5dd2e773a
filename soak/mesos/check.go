package mesos

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/server"
)

// history is what the masters served: the good states in order, when
// each began (registered, before any master could serve it) and when it
// became visible (a master served it from then on), and what every checked
// name answers in each. Bad bodies and held states are not in it: the
// server must never show them.
//
// An answer is right when it equals the name's records in a state that
// had begun when the answer arrived and that was still current, or
// replaced less than window before the query left (one refresh, the
// longest poll and the time to build: the staleness a poller has), and
// not older than a state the server had already shown for that name
// before the query left.
type history struct {
	window time.Duration

	mu     sync.Mutex
	states []servedState
	names  []*checkedName
	byKey  map[string]*checkedName
	// phase is the part of the scenario under way; pinned the state that
	// was the last when it began. counts are by phase.
	phase  string
	pinned int
	counts map[string]*phaseCount
	total  observe.Count
}

// servedState is one good state.
type servedState struct {
	begin, visible time.Time // visible is zero until it is
}

// checkedName is one checked question and its value in every state.
type checkedName struct {
	qname string
	qtype uint16
	vals  []int32          // value by state: an index into values
	ids   map[string]int32 // canonical value to its index
	// seen is the newest state this name was shown in, and when.
	seenState int
	seenAt    time.Time
}

// phaseCount is what the checker saw during one phase.
type phaseCount struct {
	Answers int
	Wrong   int
	// FromPinned are the answers equal to the state that was the last one
	// when the phase began (all of them, during a fault).
	FromPinned int
}

func newHistory(window time.Duration) *history {
	return &history{window: window, byKey: map[string]*checkedName{}, counts: map[string]*phaseCount{}, pinned: -1}
}

// begin records a new good state whose checked names answer values (see
// cluster.expect), before any master serves it; it returns its
// number.
func (h *history) begin(values map[string]string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.states)
	for _, c := range h.names {
		c.add(values[queryKey(c.qname, c.qtype)])
	}
	for k, v := range values {
		if h.byKey[k] != nil {
			continue
		}
		name, qtype := parseQueryKey(k)
		c := &checkedName{qname: name, qtype: qtype, ids: map[string]int32{}, seenState: -1}
		for range n {
			c.add("") // it had no records before
		}
		c.add(v)
		h.byKey[k] = c
		h.names = append(h.names, c)
	}
	h.states = append(h.states, servedState{begin: time.Now()})
	return n
}

// add appends the value of the next state.
func (c *checkedName) add(v string) {
	id, ok := c.ids[v]
	if !ok {
		id = int32(len(c.ids))
		c.ids[v] = id
	}
	c.vals = append(c.vals, id)
}

// visible records that state n is served from now on.
func (h *history) visible(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.states[n].visible = time.Now()
}

// count is how many states have begun.
func (h *history) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.states)
}

// last is the number of the newest state, and when it became visible.
func (h *history) last() (int, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.states) - 1
	return n, h.states[n].visible
}

func (h *history) visibleAt(n int) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.states[n].visible
}

// setPhase starts a phase of the scenario: the newest state is pinned.
func (h *history) setPhase(phase string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.phase, h.pinned = phase, len(h.states)-1
	if h.counts[phase] == nil {
		h.counts[phase] = &phaseCount{}
	}
}

// pick returns the i-th checked name, round robin.
func (h *history) pick(i int) *checkedName {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[i%len(h.names)]
}

// judge checks the answer r to c's question, sent at sent and received
// at got, and counts it.
func (h *history) judge(c *checkedName, r *dns.Msg, sent, got time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pc := h.counts[h.phase]
	if pc == nil {
		pc = &phaseCount{}
		h.counts[h.phase] = pc
	}
	pc.Answers++
	h.total.Answers++
	v, ok := answerCanonical(r)
	if id, known := c.ids[v]; ok && known && h.pinned >= 0 && id == c.vals[h.pinned] {
		pc.FromPinned++
	}
	why := h.verdict(c, r, v, ok, sent, got)
	if why == "" {
		return
	}
	pc.Wrong++
	if len(h.total.Examples) < 5 {
		h.total.Examples = append(h.total.Examples, fmt.Sprintf("%s %s: %s", c.qname, dns.TypeToString[c.qtype], why))
	}
}

// verdict says what is wrong with the answer (value v, ok false for an
// rcode other than NOERROR and NXDOMAIN), "" if nothing, and counts it.
// h.mu is held.
func (h *history) verdict(c *checkedName, r *dns.Msg, v string, ok bool, sent, got time.Time) string {
	if !ok {
		h.total.Torn++
		if r.Rcode == dns.RcodeServerFailure {
			h.total.ServFail++
		}
		return dns.RcodeToString[r.Rcode]
	}
	id, known := c.ids[v]
	floor := 0
	if sent.After(c.seenAt) {
		floor = c.seenState // the server had shown it before the query left
	}
	// The first state of this value that the answer may come from; else
	// the newest one it could have come from but for its age, or but for
	// being older than one shown before.
	matched, regress, stale := -1, -1, -1
	for n := range h.states {
		if !known || c.vals[n] != id || h.states[n].begin.After(got) {
			continue
		}
		if next := n + 1; next < len(h.states) {
			if vis := h.states[next].visible; !vis.IsZero() && vis.Add(h.window).Before(sent) {
				stale = n
				continue
			}
		}
		if n < floor {
			regress = n
			continue
		}
		matched = n
		break
	}
	switch {
	case matched >= 0:
		if matched > c.seenState {
			c.seenState, c.seenAt = matched, got
		}
		return ""
	case regress >= 0:
		h.total.Regress++
		return fmt.Sprintf("state %d shown after state %d", regress, c.seenState)
	case stale >= 0:
		h.total.Behind++
		return fmt.Sprintf("state %d, replaced more than %s before the query", stale, h.window)
	}
	h.total.Torn++
	if v == "" {
		h.total.Empty++
		return fmt.Sprintf("%s with no records, where every state allowed has some", dns.RcodeToString[r.Rcode])
	}
	return fmt.Sprintf("%q, the records of no state", v)
}

// counted returns the counts so far.
func (h *history) counted() (observe.Count, map[string]phaseCount) {
	h.mu.Lock()
	defer h.mu.Unlock()
	by := map[string]phaseCount{}
	for k, v := range h.counts {
		by[k] = *v
	}
	return h.total, by
}

// check asks s for the checked names, round robin at rate, and
// judges every answer, until ctx ends.
func check(ctx context.Context, s *server.Server, h *history, rate int) {
	dnsload.RoundRobin(ctx, s.Addr(), rate, observe.CheckersPerServer, func(q *dnsload.Querier, n int) {
		c := h.pick(n)
		sent := time.Now()
		r, _, err := q.Ask(c.qname, c.qtype)
		got := time.Now()
		if ctx.Err() != nil { // the answer may be cut short by the end
			return
		}
		if err != nil {
			h.mu.Lock()
			h.total.Errors++
			h.mu.Unlock()
			return
		}
		h.judge(c, r, sent, got)
	})
}

// marker follows the state a server serves through the marker task's
// address, asked every markerEvery: when each state was first shown.
type marker struct {
	name string
	mu   sync.Mutex
	// first is when each state was first shown; current the last shown.
	first   map[int]time.Time
	current int
}

// markerEvery is how often the marker is asked.
const markerEvery = 20 * time.Millisecond

func newMarker(name string) *marker {
	return &marker{name: name, first: map[int]time.Time{}, current: -1}
}

// follow asks s until ctx ends.
func (m *marker) follow(ctx context.Context, s *server.Server) {
	q := dnsload.NewQuerier(s.Addr())
	defer q.Close()
	t := time.NewTicker(markerEvery)
	defer t.Stop()
	for {
		if r, _, err := q.Ask(m.name, dns.TypeA); err == nil {
			m.note(r)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *marker) note(r *dns.Msg) {
	for _, rr := range r.Answer {
		a, ok := rr.(*dns.A)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.A.To4())
		if !ok {
			continue
		}
		n := int(dnsload.AddrNum(ip) - dnsload.AddrNum(markerBase))
		m.mu.Lock()
		if _, ok := m.first[n]; !ok {
			m.first[n] = time.Now()
		}
		m.current = n
		m.mu.Unlock()
	}
}

// shown returns when state n was first shown (false if not yet).
func (m *marker) shown(n int) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.first[n]
	return t, ok
}

// wait waits until state n (or a later one) has been shown, for up to
// within; it returns when n was first shown.
func (m *marker) wait(ctx context.Context, n int, within time.Duration) (time.Time, error) {
	end := time.Now().Add(within)
	for {
		m.mu.Lock()
		t, ok := m.first[n]
		later := m.current > n
		m.mu.Unlock()
		switch {
		case ok:
			return t, nil
		case later:
			return time.Time{}, fmt.Errorf("state %d never shown: state %d came first", n, m.current)
		case time.Now().After(end):
			return time.Time{}, fmt.Errorf("state %d not shown within %s (the server shows state %d)", n, within, m.current)
		case ctx.Err() != nil:
			return time.Time{}, ctx.Err()
		}
		time.Sleep(markerEvery)
	}
}
