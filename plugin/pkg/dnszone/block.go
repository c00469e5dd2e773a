package dnszone

import (
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/miekg/dns"
)

// block is the memory of one answer in a single allocation: the slots of
// its sections (the Answer's, then the Extra's), the records they point
// to, and the bytes of the names the answer makes up. A multi-record
// answer thus costs one allocation, however many records it has; the
// reply's message is the only other one.
//
// Every answer gets a fresh block that nothing ever reuses: plugins after
// this one keep the reply's records once it is written (the cache plugin
// stores the Answer slice as it is; dnstap and log read it later).
//
// Go cannot size several arrays in one allocation at run time, so each
// shape of block is a struct type made with reflect.StructOf, kept for
// the next answer of that shape; counts are rounded up to a few sizes so
// that a server makes few types. The fields are reached by their offsets.
type block struct {
	rr []dns.RR
	// addr holds the A records and, through asAAAA, the AAAA ones.
	addr  []dns.A
	srv   []dns.SRV
	ptr   []dns.PTR
	cname []dns.CNAME
	// text is where names are written: each is a string of its bytes,
	// which are never written again.
	text []byte
}

// blockShape is what a block holds: slots, address records, SRV, PTR and
// CNAME records, and bytes of names.
type blockShape struct{ rr, addr, srv, ptr, cname, text int }

// newBlock is a fresh block of shape s: rr, addr, srv, ptr and cname of
// their counts, text empty with room for s.text bytes (or more).
func newBlock(s blockShape) (b block) {
	b.alloc(&s)
	return b
}

// alloc makes b a fresh block of shape s. (A method on the caller's
// block rather than a block returned by value: the query path runs on a
// fresh goroutine's small stack, and the deepest frames count.)
func (b *block) alloc(s *blockShape) {
	c, key := s.rounded()
	t := blockTypeOf(&c, key)
	p := reflect.New(t.typ).UnsafePointer()
	b.rr = field[dns.RR](p, t.rr, c.rr, s.rr)
	b.addr = field[dns.A](p, t.addr, c.addr, s.addr)
	b.srv = field[dns.SRV](p, t.srv, c.srv, s.srv)
	b.ptr = field[dns.PTR](p, t.ptr, c.ptr, s.ptr)
	b.cname = field[dns.CNAME](p, t.cname, c.cname, s.cname)
	b.text = field[byte](p, t.text, c.text, c.text)[:0]
}

// field is the array of n Ts at offset off of the block at p, of length
// and capacity used (an append to a section copies it, as it would a
// slice made to measure); nil when the block has none.
func field[T any](p unsafe.Pointer, off uintptr, n, used int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Add(p, off)), n)[:used:used]
}

// setHdr fills a header of the block, field by field: a header built
// whole is built on the stack first, and the query path runs on a fresh
// goroutine's small stack.
func setHdr(h *dns.RR_Header, name string, rrtype uint16, ttl uint32) {
	h.Name, h.Rrtype, h.Class, h.Ttl = name, rrtype, dns.ClassINET, ttl
}

// asAAAA is the memory of an A record as an AAAA record: dns.A and
// dns.AAAA are the same memory (a header and an IP; TestAAAAIsA checks
// it), so one array of A records serves both.
func asAAAA(a *dns.A) *dns.AAAA { return (*dns.AAAA)(unsafe.Pointer(a)) }

// addrRecord is address record k, of e, owned by name: an A or, in the
// same memory, an AAAA record. (Small enough to be inlined in the loops
// that render many.)
func (b *block) addrRecord(k int, e *endpoint, name string, ttl uint32) dns.RR {
	r := &b.addr[k]
	r.Hdr.Name, r.Hdr.Class, r.Hdr.Ttl, r.A = name, dns.ClassINET, ttl, e.ip()
	if e.is4() {
		r.Hdr.Rrtype = dns.TypeA
		return r
	}
	r.Hdr.Rrtype = dns.TypeAAAA
	return asAAAA(r)
}

// name is the text written since start, as a string. It stays valid:
// the bytes are never written again, and if the text outgrew the block,
// append moved the rest, not them.
func (b *block) name(start int) string {
	if start == len(b.text) {
		return ""
	}
	return unsafe.String(&b.text[start], len(b.text)-start)
}

// rounded is s with each count rounded up to its size class, and a key
// that tells the rounded shapes apart: the classes, a byte each.
func (s *blockShape) rounded() (c blockShape, key uint64) {
	var k [6]int
	k[0], c.rr = sizeClass(s.rr)
	k[1], c.addr = sizeClass(s.addr)
	k[2], c.srv = sizeClass(s.srv)
	k[3], c.ptr = sizeClass(s.ptr)
	k[4], c.cname = sizeClass(s.cname)
	k[5], c.text = sizeClass((s.text + 63) / 64)
	c.text *= 64
	for i, class := range k {
		key |= uint64(class) << (8 * i)
	}
	return c, key
}

// sizeClass rounds n up to its size: n itself up to 16, else a power of
// two or one and a half times one (less than half as much again as
// asked); the classes are numbered in order of size.
func sizeClass(n int) (class, size int) {
	if n <= 16 {
		return n, n
	}
	class = 17
	for p := 16; ; p *= 2 {
		if n <= p+p/2 {
			return class, p + p/2
		}
		if n <= 2*p {
			return class + 1, 2 * p
		}
		class += 2
	}
}

// blockType is the struct type of a rounded shape and its fields'
// offsets.
type blockType struct {
	typ                             reflect.Type
	rr, addr, srv, ptr, cname, text uintptr
}

// blockTypes are the types made so far, by the key of their rounded
// shape: read without a lock, replaced by a copy under mu when a new
// shape comes.
var blockTypes struct {
	mu sync.Mutex
	m  atomic.Pointer[map[uint64]*blockType]
}

// blockTypeOf is the type of rounded shape c, of key key.
func blockTypeOf(c *blockShape, key uint64) *blockType {
	if m := blockTypes.m.Load(); m != nil {
		if t := (*m)[key]; t != nil {
			return t
		}
	}
	return addBlockType(*c, key)
}

// addBlockType makes the type of a shape not seen before and adds it to
// blockTypes.
func addBlockType(c blockShape, key uint64) *blockType {
	blockTypes.mu.Lock()
	defer blockTypes.mu.Unlock()
	old := blockTypes.m.Load()
	if old != nil && (*old)[key] != nil {
		return (*old)[key]
	}
	m := map[uint64]*blockType{}
	if old != nil {
		maps.Copy(m, *old)
	}
	t := makeBlockType(c)
	m[key] = t
	blockTypes.m.Store(&m)
	return t
}

// makeBlockType makes the struct type of shape c: one array field per
// count that is not zero.
func makeBlockType(c blockShape) *blockType {
	var fields []reflect.StructField
	add := func(name string, elem reflect.Type, n int) {
		if n > 0 {
			fields = append(fields, reflect.StructField{Name: name, Type: reflect.ArrayOf(n, elem)})
		}
	}
	add("RR", reflect.TypeFor[dns.RR](), c.rr)
	add("Addr", reflect.TypeFor[dns.A](), c.addr)
	add("SRV", reflect.TypeFor[dns.SRV](), c.srv)
	add("PTR", reflect.TypeFor[dns.PTR](), c.ptr)
	add("CNAME", reflect.TypeFor[dns.CNAME](), c.cname)
	add("Text", reflect.TypeFor[byte](), c.text)
	t := &blockType{typ: reflect.StructOf(fields)}
	offset := func(name string) uintptr {
		f, _ := t.typ.FieldByName(name)
		return f.Offset
	}
	t.rr, t.addr, t.srv, t.ptr = offset("RR"), offset("Addr"), offset("SRV"), offset("PTR")
	t.cname, t.text = offset("CNAME"), offset("Text")
	return t
}
