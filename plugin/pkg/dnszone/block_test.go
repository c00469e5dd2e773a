package dnszone

import (
	"context"
	"net/netip"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/miekg/dns"
)

// TestAAAAIsA: the block keeps AAAA records in its array of A records,
// which is sound only while the two are the same memory.
func TestAAAAIsA(t *testing.T) {
	a, aaaa := reflect.TypeFor[dns.A](), reflect.TypeFor[dns.AAAA]()
	if a.Size() != aaaa.Size() || a.NumField() != aaaa.NumField() {
		t.Fatalf("dns.A is %d bytes in %d fields, dns.AAAA %d in %d", a.Size(), a.NumField(), aaaa.Size(), aaaa.NumField())
	}
	for i := range a.NumField() {
		fa, fb := a.Field(i), aaaa.Field(i)
		if fa.Type != fb.Type || fa.Offset != fb.Offset {
			t.Errorf("field %d: %s %s at %d in dns.A, %s %s at %d in dns.AAAA", i, fa.Name, fa.Type, fa.Offset, fb.Name, fb.Type, fb.Offset)
		}
	}
}

func TestSizeClass(t *testing.T) {
	lastClass, lastSize := -1, -1
	for n := range 5000 {
		class, size := sizeClass(n)
		if size < n || 2*size > 3*n {
			t.Fatalf("sizeClass(%d) = %d", n, size)
		}
		if (class == lastClass) != (size == lastSize) || class < lastClass || class > 255 {
			t.Fatalf("sizeClass(%d) = class %d of size %d after class %d of size %d", n, class, size, lastClass, lastSize)
		}
		lastClass, lastSize = class, size
	}
}

// TestNewBlock: each part has the length asked, the parts do not overlap,
// and every block is new.
func TestNewBlock(t *testing.T) {
	for _, s := range []blockShape{{}, {rr: 1, addr: 1}, {rr: 20, addr: 10, srv: 10, text: 300}, {rr: 3, ptr: 3, text: 90}, {rr: 2, cname: 1}, {rr: 100, addr: 100}} {
		b, again := newBlock(s), newBlock(s)
		if cap(b.rr) != s.rr || len(b.rr) != s.rr || len(b.addr) != s.addr || len(b.srv) != s.srv || len(b.ptr) != s.ptr || len(b.cname) != s.cname ||
			len(b.text) != 0 || cap(b.text) < s.text {
			t.Errorf("%+v: rr %d, addr %d, srv %d, ptr %d, cname %d, text %d of %d", s,
				len(b.rr), len(b.addr), len(b.srv), len(b.ptr), len(b.cname), len(b.text), cap(b.text))
		}
		spans := [][2]uintptr{span(b.rr), span(b.addr), span(b.srv), span(b.ptr), span(b.cname), span(b.text[:cap(b.text)])}
		for i, x := range spans {
			for _, y := range spans[i+1:] {
				if x[0] < y[1] && y[0] < x[1] {
					t.Errorf("%+v: parts overlap: %v", s, spans)
				}
			}
		}
		if len(b.rr) > 0 && &b.rr[0] == &again.rr[0] {
			t.Errorf("%+v: two blocks share memory", s)
		}
	}
}

func span[T any](s []T) [2]uintptr {
	if cap(s) == 0 {
		return [2]uintptr{}
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return [2]uintptr{p, p + uintptr(cap(s))*unsafe.Sizeof(s[0])}
}

// TestBlockKeepsWhatItPointsTo: the collector sees the pointers of a block
// (its type is made at run time): owner names held by the block alone
// survive collections, and so do the names in its text.
func TestBlockKeepsWhatItPointsTo(t *testing.T) {
	const n = 50
	b := newBlock(blockShape{rr: 2 * n, addr: n, srv: n, text: n * 8})
	for i := range n {
		owner := strings.Repeat(string(rune('a'+i%26)), 20) // on the heap, referenced by the block only
		start := len(b.text)
		b.text = append(b.text, owner[:5]...)
		b.srv[i] = dns.SRV{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeSRV, Class: dns.ClassINET}, Target: b.name(start)}
		b.rr[i] = &b.srv[i]
		e := &endpoint{addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}).As16(), flags: flagV4}
		b.rr[n+i] = b.addrRecord(i, e, owner, 5)
	}
	rr := b.rr
	b = block{}
	for range 3 {
		runtime.GC()
		_ = make([]byte, 1<<20) // reuse freed memory, if any was
	}
	for i := range n {
		want := strings.Repeat(string(rune('a'+i%26)), 20)
		if s := rr[i].(*dns.SRV); s.Hdr.Name != want || s.Target != want[:5] {
			t.Fatalf("record %d: %q %q, want %q", i, s.Hdr.Name, s.Target, want)
		}
		if a := rr[n+i].(*dns.A); a.Hdr.Name != want || a.A[3] != byte(i) {
			t.Fatalf("record %d: %s", n+i, a)
		}
	}
}

// TestRepliesShareNothing: a reply's records are its own; the next reply
// (rotated) leaves them as they were, as the cache plugin, which keeps
// them, needs.
func TestRepliesShareNothing(t *testing.T) {
	eps := make([]EndpointFacts, 10)
	for i := range eps {
		eps[i] = NewEndpoint(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), "", 0, true)
	}
	srv := testServer(false, NewHeadless("db.ns1", eps, []SRVPort{{Name: "pg", Proto: "tcp", Number: 5432}}, nil))
	for _, qtype := range []uint16{dns.TypeA, dns.TypeSRV} {
		var replies []*dns.Msg
		var texts []string
		for range 3 {
			r := new(dns.Msg)
			r.SetQuestion("db.ns1.svc.cluster.local.", qtype)
			w := &keep{}
			if _, err := srv.ServeDNS(context.Background(), w, r); err != nil {
				t.Fatal(err)
			}
			replies, texts = append(replies, w.msg), append(texts, w.msg.String())
		}
		for i, m := range replies {
			if m.String() != texts[i] {
				t.Errorf("%s reply %d changed after the next ones", dns.TypeToString[qtype], i)
			}
			if i > 0 && (m.Answer[0] == replies[i-1].Answer[0] || &m.Answer[0] == &replies[i-1].Answer[0]) {
				t.Errorf("%s replies %d and %d share records", dns.TypeToString[qtype], i-1, i)
			}
		}
	}
}

// BenchmarkNewBlock is the cost of a block of one PTR record.
func BenchmarkNewBlock(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newBlock(blockShape{rr: 1, ptr: 1, text: 30})
	}
}
