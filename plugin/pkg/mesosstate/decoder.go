package mesosstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
	"unicode/utf8"
)

// Decoder reads a master's states one after another, each as Decode
// reads one, at the cost of what changed since the last: a task or an
// agent whose JSON text is, byte for byte, one of the last state's is
// not decoded again, its value from then is taken. Most of a state is
// its tasks, and from one poll to the next most of them are the same
// text: the decoder hashes each one's bytes (only checking, where the
// last state had a task in the same place, that the bytes there hash as
// that task's did), and decodes with encoding/json only the new ones.
// The rest of the body is checked as encoding/json checks it, so a body
// is refused where json.Unmarshal would refuse it, with the same error.
//
// The body is read from an io.Reader through a window (64 KiB, or the
// largest task): a decoder holds the last state's tasks and agents (the
// decoded values, shared with the states it returned: treat them as
// read-only), never a body.
//
// Two values are taken as equal when their lengths and 64-bit hashes
// (hash/maphash, seeded at random per decoder) are: unequal texts that
// agree on both are as likely as any two of the incremental build's
// fingerprints, and a state would need billions of tasks to make one
// likely. A Decoder is used by one goroutine at a time.
type Decoder struct {
	seed   maphash.Seed
	tasks  memo[Task]
	slaves memo[Slave]
	// fresh: decode every task and agent, keep none (Decode's).
	fresh bool
	// buf is the scanner's window, kept between states.
	buf   []byte
	stats DecodeStats
}

// DecodeStats are what the last Decode read.
type DecodeStats struct {
	// Tasks and Agents are the tasks and agents read; TasksDecoded and
	// AgentsDecoded those of them decoded, not taken from the last state.
	Tasks, TasksDecoded, Agents, AgentsDecoded int
	// Bytes is the body's length.
	Bytes int64
}

// NewDecoder returns a decoder that knows no state yet (as does a zero
// Decoder).
func NewDecoder() *Decoder {
	seed := maphash.MakeSeed()
	return &Decoder{seed: seed, tasks: memo[Task]{seed: seed}, slaves: memo[Slave]{seed: seed}}
}

// Decode parses a /master/state body. It fails on anything that is not one
// whole, well-typed state object naming a leader, so a truncated or broken
// body is never mistaken for a cluster that lost its tasks: the caller
// keeps its last good state instead. Items DNS cannot use (a task with
// no name, an agent with a bad PID) are not errors; the caller skips them.
func Decode(body []byte) (*State, error) {
	d := &Decoder{fresh: true}
	return d.Decode(bytes.NewReader(body))
}

// maxKeptWindow is the largest window a decoder keeps between states.
const maxKeptWindow = 1 << 20

// Decode parses the state r holds, as the package's Decode does, with the
// same errors; an error of r's own (a body over its limit) is returned as
// it is. A failed state leaves the decoder as the last good one left it.
func (d *Decoder) Decode(r io.Reader) (*State, error) {
	if d.seed == (maphash.Seed{}) && !d.fresh { // a zero Decoder
		d.seed = maphash.MakeSeed()
		d.tasks.seed, d.slaves.seed = d.seed, d.seed
	}
	s := newScanner(r, d.buf)
	sr := &stateReader{s: s, d: d}
	st, err := sr.body()
	if d.buf = s.buf; cap(d.buf) > maxKeptWindow {
		d.buf = nil
	}
	d.stats = DecodeStats{Tasks: d.tasks.read, TasksDecoded: d.tasks.decoded, Agents: d.slaves.read,
		AgentsDecoded: d.slaves.decoded, Bytes: s.offset()}
	if err != nil {
		d.tasks.abort()
		d.slaves.abort()
		return nil, err
	}
	d.tasks.commit()
	d.slaves.commit()
	if st.Leader == "" {
		return nil, ErrNoLeader
	}
	if _, err := ParsePID(st.Leader); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLeader, err)
	}
	return st, nil
}

// Stats are what the last Decode read.
func (d *Decoder) Stats() DecodeStats { return d.stats }

// stateReader reads one state: the grammar of the state's own objects
// (the state, its frameworks), the lists in them, and json.Unmarshal
// for the rest of the values DNS reads.
type stateReader struct {
	s *scanner
	d *Decoder
	// typeErr is the first value of a wrong type: reported once the whole
	// body is known to be good JSON, as json.Unmarshal reports one.
	typeErr error
	// seen: a list's key came before (a later one is decoded into the
	// first's values, as json.Unmarshal does).
	seenFrameworks, seenSlaves bool
}

// body reads the whole body: one object, then nothing but white space.
func (sr *stateReader) body() (*State, error) {
	s := sr.s
	c, ok := s.space()
	switch {
	case !ok && s.err != nil:
		return nil, s.err
	case !ok:
		return nil, ErrEmpty
	case c != '{':
		if err := s.value(0); err != nil {
			return nil, sr.classify(err)
		}
		return nil, ErrNotObject
	}
	s.pos++
	st := &State{}
	if err := s.members(1, func(key []byte) error { return sr.stateMember(st, key) }); err != nil {
		return nil, sr.classify(err)
	}
	if _, ok := s.space(); ok {
		return nil, fmt.Errorf("%w at byte %d", ErrTrailingData, s.offset())
	}
	if s.err != nil {
		return nil, s.err
	}
	if sr.typeErr != nil {
		return nil, sr.typeErr
	}
	return st, nil
}

// classify turns a scanner's failure into the package's errors.
func (sr *stateReader) classify(err error) error {
	if errors.Is(err, errCut) {
		return fmt.Errorf("%w: the body ends, at %d bytes, inside the JSON value", ErrTruncated, sr.s.offset())
	}
	return err
}

// stateMember reads the value of key, a member of the state.
func (sr *stateReader) stateMember(st *State, key []byte) error {
	switch name := keyName(key); {
	case strings.EqualFold(name, "frameworks"):
		if sr.seenFrameworks {
			return sr.field(1, &st.Frameworks)
		}
		sr.seenFrameworks = true
		return list(sr, 1, &st.Frameworks, sr.framework)
	case strings.EqualFold(name, "slaves"):
		if sr.seenSlaves {
			return sr.field(1, &st.Slaves)
		}
		sr.seenSlaves = true
		return list(sr, 1, &st.Slaves, func(depth int, a *Slave) error { return remembered(sr, &sr.d.slaves, depth, a) })
	case strings.EqualFold(name, "leader"):
		return sr.field(1, &st.Leader)
	case strings.EqualFold(name, "leader_info"):
		return sr.field(1, &st.LeaderInfo)
	case strings.EqualFold(name, "pid"):
		return sr.field(1, &st.PID)
	case strings.EqualFold(name, "hostname"):
		return sr.field(1, &st.Hostname)
	}
	return sr.s.value(1)
}

// framework reads one framework, held at depth, its tasks one at a time.
func (sr *stateReader) framework(depth int, f *Framework) error {
	c, err := sr.s.next()
	if err != nil {
		return err
	}
	if c != '{' {
		return sr.field(depth, f) // null, or a wrong type
	}
	sr.s.pos++
	seenTasks := false
	return sr.s.members(depth+1, func(key []byte) error {
		switch name := keyName(key); {
		case strings.EqualFold(name, "tasks"):
			if seenTasks {
				return sr.field(depth+1, &f.Tasks)
			}
			seenTasks = true
			return list(sr, depth+1, &f.Tasks, func(depth int, t *Task) error { return remembered(sr, &sr.d.tasks, depth, t) })
		case strings.EqualFold(name, "id"):
			return sr.field(depth+1, &f.ID)
		case strings.EqualFold(name, "name"):
			return sr.field(depth+1, &f.Name)
		case strings.EqualFold(name, "hostname"):
			return sr.field(depth+1, &f.Hostname)
		case strings.EqualFold(name, "pid"):
			return sr.field(depth+1, &f.PID)
		case strings.EqualFold(name, "active"):
			return sr.field(depth+1, &f.Active)
		}
		return sr.s.value(depth + 1)
	})
}

// list reads the list held at depth into *out, each element with elem
// (given the elements' depth), as json.Unmarshal fills a nil slice: null
// leaves it nil, [] makes it empty, a value of another type is a type
// error.
func list[T any](sr *stateReader, depth int, out *[]T, elem func(depth int, v *T) error) error {
	c, err := sr.s.next()
	if err != nil {
		return err
	}
	if c != '[' {
		return sr.field(depth, out)
	}
	if depth+1 > maxDepth {
		return sr.s.syntax("exceeded max depth")
	}
	sr.s.pos++
	err = sr.s.elements(func() error {
		var v T
		err := elem(depth+1, &v)
		*out = append(*out, v)
		return err
	})
	if *out == nil {
		*out = []T{}
	}
	return err
}

// field reads the value held at depth into *v with json.Unmarshal.
func (sr *stateReader) field(depth int, v any) error {
	at := sr.s.offset()
	raw, err := sr.s.capture(depth)
	if err != nil {
		return err
	}
	return sr.failed(json.Unmarshal(raw, v), at)
}

// failed is json.Unmarshal's err on the value at body offset at: a value
// of the wrong type is kept for the end (see typeErr).
func (sr *stateReader) failed(err error, at int64) error {
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typ):
		if sr.typeErr == nil {
			sr.typeErr = fmt.Errorf("%w: %w (in the value at byte %d)", ErrMalformed, err, at)
		}
		return nil
	}
	return fmt.Errorf("%w: %w (in the value at byte %d)", ErrMalformed, err, at)
}

// remembered reads one element held at depth, a task or an agent, into
// *v: the last state's value when its text is one of the last state's,
// else decoded (see Decoder).
func remembered[T any](sr *stateReader, m *memo[T], depth int, v *T) error {
	s := sr.s
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != '{' {
		return sr.field(depth, v) // null, or a wrong type
	}
	m.read++
	if sr.d.fresh {
		m.decoded++
		return sr.field(depth, v)
	}
	if m.predicted(s, v) {
		return nil
	}
	at := s.offset()
	raw, err := s.object(depth)
	if err != nil {
		return err
	}
	sum := maphash.Bytes(m.seed, raw)
	if m.found(sum, len(raw), v) {
		return nil
	}
	m.decoded++
	if err := json.Unmarshal(raw, v); err != nil {
		return sr.failed(err, at)
	}
	m.next = append(m.next, memoEntry[T]{sum: sum, n: len(raw), v: *v})
	return nil
}

// memo is the values of one kind (tasks, agents) of the last state, by
// their text, and those of the state being read.
type memo[T any] struct {
	seed maphash.Seed
	// last are the last state's values in the body's order; index finds
	// one by its text's hash (made at the first value not where the last
	// state had it).
	last  []memoEntry[T]
	index map[uint64]int
	// cur is where in last the next value is looked for first: after the
	// last one found.
	cur int
	// next are the values of the state being read.
	next []memoEntry[T]
	// read and decoded count this state's values, and those decoded.
	read, decoded int
}

// memoEntry is a value and its text's length and hash.
type memoEntry[T any] struct {
	sum uint64
	n   int
	v   T
}

// predicted tells whether the text at the scanner's position is the
// value after the last one found, taking it if so: one hash of as many
// bytes, no scan.
func (m *memo[T]) predicted(s *scanner, v *T) bool {
	if m.cur >= len(m.last) {
		return false
	}
	e := &m.last[m.cur]
	if !s.ensure(e.n) || s.buf[s.pos+e.n-1] != '}' || maphash.Bytes(m.seed, s.buf[s.pos:s.pos+e.n]) != e.sum {
		return false
	}
	s.pos += e.n
	m.take(m.cur, v)
	return true
}

// found tells whether the last state had a value of that text, taking
// it if so.
func (m *memo[T]) found(sum uint64, n int, v *T) bool {
	if len(m.last) == 0 {
		return false
	}
	if m.index == nil {
		m.index = make(map[uint64]int, len(m.last))
		for i := range m.last {
			m.index[m.last[i].sum] = i
		}
	}
	i, ok := m.index[sum]
	if !ok || m.last[i].n != n {
		return false
	}
	m.take(i, v)
	return true
}

func (m *memo[T]) take(i int, v *T) {
	*v = m.last[i].v
	m.next = append(m.next, m.last[i])
	m.cur = i + 1
}

// commit makes the state read the last one.
func (m *memo[T]) commit() {
	clear(m.last)
	m.last, m.next = m.next, m.last[:0]
	m.index, m.cur, m.read, m.decoded = nil, 0, 0, 0
}

// abort forgets the state read: the last good one stays the last.
func (m *memo[T]) abort() {
	clear(m.next)
	m.next, m.cur, m.read, m.decoded = m.next[:0], 0, 0, 0
}

// keyName is the text of a key (its JSON string, quotes included), as
// json.Unmarshal reads it to match a field.
func keyName(key []byte) string {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var name string
	_ = json.Unmarshal(key, &name) // checked by the scanner: cannot fail
	return name
}
