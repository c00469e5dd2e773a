package kubesource

import (
	"sync"
	"time"
)

// A Kubernetes schema's builder turns each cache Event into marks on a
// Tracker: the Key of the service or import to rebuild, with the oldest
// change time not yet served. Marking is quick and never blocks the
// informers; the build loop (package changes) Takes the marks and
// rebuilds only what they name.

// Key names what a change dirties: one Service (kubeschema) or one
// ServiceImport (multicluster), by namespace and name.
type Key struct {
	Namespace, Name string
}

// String is "<namespace>/<name>", as kubectl and the logs write it.
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Labels is the key as the snapshot names it: "<name>.<namespace>", the
// labels the service has under svc.<zone> (dnszone's service key).
func (k Key) Labels() string { return k.Name + "." + k.Namespace }

// Set is what changed between two builds.
type Set struct {
	// Keys are the services or imports to rebuild, each with the time of
	// its oldest change not yet served: programming latency is measured
	// from it.
	Keys map[Key]time.Time
	// Namespaces are the namespaces whose labels changed (kubeschema's
	// namespace_labels): each of their services is rebuilt.
	Namespaces map[string]bool
	// Local are local services whose addresses may have changed
	// (multicluster: they decide which imported addresses get a PTR).
	Local map[Key]bool
	// Ranges: a ServiceCIDR changed (kubeschema's reverse_cidrs auto).
	Ranges bool
}

// Add marks k changed at changed, keeping the oldest time when k is
// already marked.
func (s *Set) Add(k Key, changed time.Time) {
	if s.Keys == nil {
		s.Keys = map[Key]time.Time{}
	}
	if old, ok := s.Keys[k]; !ok || changed.Before(old) {
		s.Keys[k] = changed
	}
}

// Empty tells whether nothing is marked.
func (s *Set) Empty() bool {
	return len(s.Keys) == 0 && len(s.Namespaces) == 0 && len(s.Local) == 0 && !s.Ranges
}

// Tracker collects marks from the informers' goroutines until the
// builder's goroutine takes them. Its methods are safe for concurrent use
// and never block for long.
type Tracker struct {
	mu  sync.Mutex
	set Set
}

// Mark marks k changed at changed (the oldest time is kept).
func (t *Tracker) Mark(k Key, changed time.Time) {
	t.mu.Lock()
	t.set.Add(k, changed)
	t.mu.Unlock()
}

// MarkNamespace marks the labels of namespace ns changed.
func (t *Tracker) MarkNamespace(ns string) {
	t.mu.Lock()
	if t.set.Namespaces == nil {
		t.set.Namespaces = map[string]bool{}
	}
	t.set.Namespaces[ns] = true
	t.mu.Unlock()
}

// MarkLocal marks the addresses of local service k changed.
func (t *Tracker) MarkLocal(k Key) {
	t.mu.Lock()
	if t.set.Local == nil {
		t.set.Local = map[Key]bool{}
	}
	t.set.Local[k] = true
	t.mu.Unlock()
}

// MarkRanges marks the service ranges changed.
func (t *Tracker) MarkRanges() {
	t.mu.Lock()
	t.set.Ranges = true
	t.mu.Unlock()
}

// Take returns what was marked and starts afresh. The Set's maps are the
// caller's (nil when nothing of their kind was marked; reading a nil map is
// fine, and Add makes Keys).
func (t *Tracker) Take() Set {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.set
	t.set = Set{}
	return s
}
