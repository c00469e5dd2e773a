package dnszone

import (
	"bytes"
	"maps"
	"math/bits"
	"net/netip"
	"slices"
	"strings"
)

// The services and the PTR index are kept in small shards under a
// two-level tree, so that a change copies the few shards it touches and
// the nodes above them, never the whole index: a namespace of 10,000
// services is as cheap to change as one of ten, and one address change
// at 100,000 addresses copies about a kilobyte.
const (
	// fan is the width of each node of the trees.
	fan = 16
	// svcShards: services in shards by a hash of the key, fan × fan.
	svcShards = fan * fan
	// ptrShards: the PTR index in shards by the address's last 12 bits
	// (which spread the sequential addresses clusters allocate), fan³:
	// some 25 entries a shard at 100,000 addresses.
	ptrShards = fan * fan * fan
)

// svcNode holds fan service shards.
type svcNode [fan]map[string]*Facts

// ptrNode holds fan nodes of fan PTR shards.
type ptrNode [fan]*ptrLeaves

// ptrLeaves holds fan PTR shards, each sorted by address, then service.
type ptrLeaves [fan][]ptrEntry

// Snapshot is everything the query path reads. It is immutable once
// published; a change builds a new one through an Edit, sharing every
// node and shard it does not touch, and swaps it in atomically, so
// queries never lock.
type Snapshot struct {
	// services by key "<svc>.<ns>", in shards by serviceShard; only
	// services that have a name in DNS. A nil node has no service.
	services [fan]*svcNode
	// parents counts the facts under each name that exists only above
	// them, an empty non-terminal while its count is above zero: a
	// service's namespace (<ns>.svc.<zone>), a record set's ancestors
	// (see Facts.eachParent).
	parents map[string]int32
	total   int
	// ptr holds the PTR index in shards by ptrShard; a nil node has no
	// entry.
	ptr [fan]*ptrNode
	// serial of the zones' SOA: changes whenever the data does.
	serial uint32
}

// ptrEntry says that addr has a PTR record of the service of key: to the
// host name of its first named endpoint at addr, or to the service name
// for a virtual address. The entry names the service by key, not by its
// facts, so that a rebuilt service keeps the entries of the addresses it
// still has: an update touches only the entries of the addresses that
// came or went. 32 bytes.
type ptrEntry struct {
	addr [16]byte
	key  string
}

func comparePTR(a, b ptrEntry) int {
	if c := bytes.Compare(a.addr[:], b.addr[:]); c != 0 {
		return c
	}
	return strings.Compare(a.key, b.key)
}

func serviceShard(key string) int {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % svcShards)
}

// ptrShard is addr's PTR shard: its last byte, and the low bits of the one
// before (fan × fan × fan shards).
func ptrShard(addr [16]byte) int { return int(addr[14]&(fan-1))<<8 | int(addr[15]) }

// shardOf is the map of shard i of s; nil when it has no service.
func (s *Snapshot) shardOf(i int) map[string]*Facts {
	if n := s.services[i/fan]; n != nil {
		return n[i%fan]
	}
	return nil
}

// ptrLeaf is PTR shard i of s.
func (s *Snapshot) ptrLeaf(i int) []ptrEntry {
	if n := s.ptr[i/(fan*fan)]; n != nil {
		if l := n[i/fan%fan]; l != nil {
			return l[i%fan]
		}
	}
	return nil
}

// Serial is the SOA serial.
func (s *Snapshot) Serial() uint32 { return s.serial }

// Service is the service of key "<svc>.<ns>", or nil.
func (s *Snapshot) Service(key string) *Facts { return s.shardOf(serviceShard(key))[key] }

// HasNamespace tells whether a service of namespace ns has a name.
func (s *Snapshot) HasNamespace(ns string) bool { return s.parents[ns] > 0 }

// hasParent tells whether a record set's name is below name (RecordNames).
func (s *Snapshot) hasParent(name string) bool { return s.parents[name] > 0 }

// Len is the number of services with a name.
func (s *Snapshot) Len() int { return s.total }

// Services lists every service, sorted by key (for transfers and tests).
func (s *Snapshot) Services() []*Facts {
	out := make([]*Facts, 0, s.total)
	for i := range svcShards {
		for _, svc := range s.shardOf(i) {
			out = append(out, svc)
		}
	}
	slices.SortFunc(out, func(a, b *Facts) int { return strings.Compare(a.key, b.key) })
	return out
}

// Each calls fn with every service (or record set), in no order: a walk
// without the list and the sort of Services.
func (s *Snapshot) Each(fn func(*Facts)) {
	for i := range svcShards {
		for _, svc := range s.shardOf(i) {
			fn(svc)
		}
	}
}

// ptrOf returns the PTR entries of addr.
func (s *Snapshot) ptrOf(addr netip.Addr) []ptrEntry {
	a := addr.As16()
	sh := s.ptrLeaf(ptrShard(a))
	i, _ := slices.BinarySearchFunc(sh, a, func(e ptrEntry, t [16]byte) int { return bytes.Compare(e.addr[:], t[:]) })
	j := i
	for j < len(sh) && sh[j].addr == a {
		j++
	}
	return sh[i:j]
}

// PTRs calls fn with every address of the PTR index and the host name it
// points to under zone (for tests), shard by shard.
func (s *Snapshot) PTRs(zone string, fn func(addr netip.Addr, target string)) {
	for i := range ptrShards {
		for _, e := range s.ptrLeaf(i) {
			if t := s.ptrTarget(e, zone); t != "" {
				fn(addrOf(e.addr), t)
			}
		}
	}
}

// PTREntries counts the entries of the PTR index, each service's of an
// address one: a test's check that edits leave none behind.
func (s *Snapshot) PTREntries() int {
	n := 0
	for i := range ptrShards {
		n += len(s.ptrLeaf(i))
	}
	return n
}

func addrOf(a [16]byte) netip.Addr { return netip.AddrFrom16(a).Unmap() }

// ptrTarget is the name e's PTR record points to under zone; "" if the
// index and the services disagree (never, when edits keep them in step).
func (s *Snapshot) ptrTarget(e ptrEntry, zone string) string {
	t, ok := s.ptrOwner(e)
	if !ok {
		return ""
	}
	return string(t.appendName(make([]byte, 0, t.nameLen(zone)), zone))
}

// ptrName is what a PTR record points to: the name of a service, or of
// one of its endpoints (ep) when it is headless.
type ptrName struct {
	svc *Facts
	ep  int
}

// ptrOwner is the target of e's record; ok false when it has none.
func (s *Snapshot) ptrOwner(e ptrEntry) (_ ptrName, ok bool) {
	svc, ep := s.ptrEndpoint(e)
	if svc == nil || (svc.kind != Virtual && !svc.endpoints[ep].named()) {
		return ptrName{}, false
	}
	return ptrName{svc: svc, ep: ep}, true
}

// appendName appends the target's name under zone to b.
func (t ptrName) appendName(b []byte, zone string) []byte {
	switch t.svc.kind {
	case Records:
		return append(append(append(b, t.svc.key...), '.'), zone...)
	case Headless:
		b = append(t.svc.appendPrefix(b, t.ep), '.')
	}
	b = append(append(b, t.svc.key...), ".svc."...)
	return append(b, zone...)
}

// nameLen is the length of the target's name under zone.
func (t ptrName) nameLen(zone string) int {
	switch t.svc.kind {
	case Records:
		return len(t.svc.key) + 1 + len(zone)
	case Headless:
		return t.svc.prefixLen(t.ep) + 1 + len(t.svc.key) + len(".svc.") + len(zone)
	}
	return len(t.svc.key) + len(".svc.") + len(zone)
}

// ptrEndpoint is the service of e and the index of the endpoint its record
// is of: the first of e's address with a PTR record.
func (s *Snapshot) ptrEndpoint(e ptrEntry) (*Facts, int) {
	svc := s.Service(e.key)
	if svc == nil {
		return nil, 0
	}
	i := svc.firstAt(e.addr)
	for ; i < len(svc.endpoints) && svc.endpoints[i].addr == e.addr; i++ {
		if svc.hasPTR(i) {
			return svc, i
		}
	}
	return nil, 0
}

// Edit changes a snapshot that is not published yet. Each node, shard
// (and the namespace counts) is copied before its first change: they are
// shared with the published snapshot, which queries read without a lock.
// A batch thus costs what it touches.
type Edit struct {
	s *Snapshot
	// fresh: every node, map and shard of s is new (a full build); its
	// PTR shards are sorted at Done.
	fresh bool
	// What this edit has copied already, by index: service nodes and
	// shards, PTR nodes, their children and shards.
	svcNodes, ptrNodes bitset[[1]uint64]
	svcCopied          bitset[[svcShards / 64]uint64]
	leaves             bitset[[fan * fan / 64]uint64]
	ptrCopied          bitset[[ptrShards / 64]uint64]
	parentsCopied      bool
}

// bitset is a set of small integers in an array of words.
type bitset[W words] struct{ w W }

// words are the sizes of bitset used.
type words interface {
	~[1]uint64 | ~[4]uint64 | ~[64]uint64
}

func (b *bitset[W]) has(i int) bool { return b.w[i/64]&(1<<(i%64)) != 0 }
func (b *bitset[W]) add(i int)      { b.w[i/64] |= 1 << (i % 64) }

// each calls fn with every member, in order.
func (b *bitset[W]) each(fn func(int)) {
	for k := 0; k < len(b.w); k++ {
		for w := b.w[k]; w != 0; w &= w - 1 {
			fn(k*64 + bits.TrailingZeros64(w))
		}
	}
}

// NewEdit starts an empty snapshot with serial.
func NewEdit(serial uint32) *Edit {
	return &Edit{s: &Snapshot{serial: serial, parents: map[string]int32{}}, fresh: true}
}

// Edit starts a snapshot that is s with changes, and serial.
func (s *Snapshot) Edit(serial uint32) *Edit {
	n := *s
	n.serial = serial
	return &Edit{s: &n}
}

// Done finishes the edit: the snapshot is ready to publish and must not
// change any more.
func (e *Edit) Done() *Snapshot {
	if e.fresh {
		// Sorted once, and to measure: no room left by the appends, nor a
		// shard that removals emptied.
		for i := range ptrShards {
			switch sh := e.s.ptrLeaf(i); {
			case len(sh) > 0:
				slices.SortFunc(sh, comparePTR)
				*e.leaf(i) = slices.Clip(slices.Clone(sh))
			case sh != nil:
				*e.leaf(i) = nil
			}
		}
	}
	e.ptrCopied.each(func(i int) { *e.leaf(i) = trim(e.s.ptrLeaf(i)) })
	s := e.s
	e.s = nil
	return s
}

// trim gives back the room appends left over in a PTR shard: a third of
// the index after a build.
func trim(sh []ptrEntry) []ptrEntry {
	switch {
	case len(sh) == 0:
		return nil
	case cap(sh) > len(sh)+len(sh)/4+4:
		return slices.Clone(sh)
	}
	return sh
}

// serviceShard is shard i of the services, the edit's own to change.
func (e *Edit) serviceShard(key string) map[string]*Facts {
	i := serviceShard(key)
	node := e.svcNode(i / fan)
	m := node[i%fan]
	if !e.fresh && !e.svcCopied.has(i) {
		e.svcCopied.add(i)
		m = maps.Clone(m)
	}
	if m == nil {
		m = map[string]*Facts{}
	}
	node[i%fan] = m
	return m
}

// svcNode is node n of the services, the edit's own to change.
func (e *Edit) svcNode(n int) *svcNode {
	return own(&e.s.services[n], e.fresh, &e.svcNodes, n)
}

// own makes *slot, node n of its level of a tree, the edit's own to
// change: a new node when there is none, a copy when it is still shared
// with the published snapshot (n not in copied, not a fresh build).
func own[N any, W words](slot **N, fresh bool, copied *bitset[W], n int) *N {
	node := *slot
	switch {
	case node == nil:
		node = new(N)
	case !fresh && !copied.has(n):
		c := *node
		node = &c
	default:
		return node
	}
	copied.add(n)
	*slot = node
	return node
}

// dropShard removes service shard i, now empty.
func (e *Edit) dropShard(i int) {
	e.svcNode(i / fan)[i%fan] = nil
}

// count counts svc in (delta 1) or out (-1) of the total and of each of
// its parents' counts.
func (e *Edit) count(svc *Facts, delta int32) {
	if !e.fresh && !e.parentsCopied {
		e.parentsCopied = true
		e.s.parents = maps.Clone(e.s.parents)
	}
	svc.eachParent(func(p string) {
		if n := e.s.parents[p] + delta; n > 0 {
			e.s.parents[p] = n
		} else {
			delete(e.s.parents, p)
		}
	})
	e.s.total += int(delta)
}

// Put adds svc, replacing the service of the same key; it returns that
// one. PTR entries are the caller's to change.
func (e *Edit) Put(svc *Facts) (old *Facts) {
	m := e.serviceShard(svc.key)
	old = m[svc.key]
	m[svc.key] = svc
	switch {
	case old == nil:
		e.count(svc, 1)
	case (old.kind == Records) != (svc.kind == Records):
		// One key, other parents (a namespace, or every ancestor).
		e.count(old, -1)
		e.count(svc, 1)
	}
	return old
}

// Remove drops the service of key and returns it (nil when absent).
func (e *Edit) Remove(key string) (old *Facts) {
	if e.s.Service(key) == nil {
		return nil
	}
	m := e.serviceShard(key)
	old = m[key]
	delete(m, key)
	if len(m) == 0 {
		e.dropShard(serviceShard(key))
	}
	e.count(old, -1)
	return old
}

// ptrSlack is the spare room of a copied PTR shard, within what Done
// leaves untrimmed.
const ptrSlack = 4

// ptrShard is the PTR shard of addr, the edit's own to change.
func (e *Edit) ptrShard(addr [16]byte) *[]ptrEntry {
	i := ptrShard(addr)
	sh := e.leaf(i)
	if !e.fresh && !e.ptrCopied.has(i) {
		e.ptrCopied.add(i)
		// Room for a few inserts: an append past the copy's capacity
		// would copy the shard again, and Done a third time to trim it.
		c := make([]ptrEntry, len(*sh), len(*sh)+ptrSlack)
		copy(c, *sh)
		*sh = c
	}
	return sh
}

// leaf is the slot of PTR shard i in the edit's own nodes (the shard
// itself is ptrShard's to copy).
func (e *Edit) leaf(i int) *[]ptrEntry {
	node := e.ptrNode(i / (fan * fan))
	j := i / fan // the leaves' index among all
	return &own(&node[j%fan], e.fresh, &e.leaves, j)[i%fan]
}

// ptrNode is node n of the PTR index, the edit's own to change.
func (e *Edit) ptrNode(n int) *ptrNode {
	return own(&e.s.ptr[n], e.fresh, &e.ptrNodes, n)
}

// AddPTR says that addr has a PTR record of svc (of its first endpoint at
// addr with one). Adding it twice is harmless.
func (e *Edit) AddPTR(addr netip.Addr, svc *Facts) {
	e.addPTR(ptrEntry{addr: addr.As16(), key: svc.key})
}

func (e *Edit) addPTR(p ptrEntry) {
	if e.fresh {
		// A build: sorted once, at Done.
		sh := e.ptrShard(p.addr)
		*sh = append(*sh, p)
		return
	}
	at, found := slices.BinarySearchFunc(e.s.ptrLeaf(ptrShard(p.addr)), p, comparePTR)
	if found {
		return
	}
	sh := e.ptrShard(p.addr)
	*sh = slices.Insert(*sh, at, p)
}

// ClearPTR removes the entries of addr: the service of key's, or every
// one when key is "".
func (e *Edit) ClearPTR(addr netip.Addr, key string) {
	a := addr.As16()
	cur := e.s.ptrLeaf(ptrShard(a))
	match := func(p ptrEntry) bool { return p.addr == a && (key == "" || p.key == key) }
	if e.fresh {
		if slices.ContainsFunc(cur, match) {
			sh := e.ptrShard(a)
			*sh = slices.DeleteFunc(*sh, match)
		}
		return
	}
	lo, _ := slices.BinarySearchFunc(cur, ptrEntry{addr: a, key: key}, comparePTR)
	hi := lo
	for hi < len(cur) && match(cur[hi]) {
		hi++
	}
	if lo == hi {
		return // none: nothing to copy
	}
	sh := e.ptrShard(a)
	*sh = slices.Delete(*sh, lo, hi)
}

// AddPTRs indexes every address of svc that has a PTR record: each
// address of a virtual service, each named endpoint of a headless one.
func (e *Edit) AddPTRs(svc *Facts) { e.UpdatePTRs(nil, svc) }

// RemovePTRs removes the entries AddPTRs made for svc.
func (e *Edit) RemovePTRs(svc *Facts) { e.UpdatePTRs(svc, nil) }

// UpdatePTRs changes the entries of prev (the facts a service had, nil if
// none) into those of next (its new facts, nil when it goes; the same key
// as prev). An address both have keeps its entry, untouched: only the
// addresses that came or went cost a change, and only their shards are
// copied.
func (e *Edit) UpdatePTRs(prev, next *Facts) {
	was, is := ptrAddrs(prev), ptrAddrs(next)
	key := ""
	if prev != nil {
		key = prev.key
	}
	gone, came := diffSorted(was, is)
	for _, a := range gone {
		e.ClearPTR(addrOf(a), key)
	}
	for _, a := range came {
		e.addPTR(ptrEntry{addr: a, key: next.key})
	}
}

// ptrAddrs are the addresses of svc with a PTR record, sorted, each once.
func ptrAddrs(svc *Facts) [][16]byte {
	if svc == nil {
		return nil
	}
	out := make([][16]byte, 0, len(svc.endpoints))
	for i := range svc.endpoints {
		if a := svc.endpoints[i].addr; svc.hasPTR(i) && (len(out) == 0 || out[len(out)-1] != a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(out)
}

// diffSorted returns what is only in a and what is only in b, both sorted.
func diffSorted(a, b [][16]byte) (onlyA, onlyB [][16]byte) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && bytes.Compare(a[i][:], b[j][:]) < 0:
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || bytes.Compare(a[i][:], b[j][:]) > 0:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}

// PTROwner is the first entry of addr's PTR records: the service and the
// index of its endpoint; nil when addr has none.
func (s *Snapshot) PTROwner(addr netip.Addr) (svc *Facts, ep int) {
	if entries := s.ptrOf(addr); len(entries) > 0 {
		return s.ptrEndpoint(entries[0])
	}
	return nil, 0
}

// Service is the service of key in the snapshot being edited, or nil.
func (e *Edit) Service(key string) *Facts { return e.s.Service(key) }

// SetSerial sets the serial of the snapshot being edited.
func (e *Edit) SetSerial(serial uint32) { e.s.serial = serial }
