package watchcache

import (
	"bytes"
	"fmt"
	"net/netip"
	"unique"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API's protobuf encoding, read field by field. The generated
// Unmarshal of an API type allocates every string, pointer and map of the
// object, managedFields and owner references included, only for the
// conversion to keep a few of them; reading the wire directly keeps what
// DNS needs and steps over the rest.

// protobufPrefix starts every protobuf-encoded API object: "k8s" and a zero.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// wireField is one field of a message: its number, wire type and value
// (the varint for VarintType, the bytes for BytesType).
type wireField struct {
	num    protowire.Number
	typ    protowire.Type
	varint uint64
	bytes  []byte
}

// wireReader walks the fields of one message.
type wireReader struct {
	b   []byte
	err error
}

// next reads the next field into f; false at the end of the message or on
// malformed input (then r.err is set). Fields of other wire types (fixed
// width, groups) are stepped over whole and returned without a value.
func (r *wireReader) next(f *wireField) bool {
	if len(r.b) == 0 || r.err != nil {
		return false
	}
	// The fast path: a one-byte tag (fields 1–15) of a varint below 128 or
	// of bytes shorter than 128, which is most fields of API objects.
	if len(r.b) >= 2 && r.b[0] < 0x80 && r.b[1] < 0x80 {
		num, typ := protowire.Number(r.b[0]>>3), protowire.Type(r.b[0]&7)
		switch {
		case typ == protowire.VarintType && num > 0:
			*f = wireField{num: num, typ: typ, varint: uint64(r.b[1])}
			r.b = r.b[2:]
			return true
		case typ == protowire.BytesType && num > 0 && int(r.b[1]) <= len(r.b)-2:
			n := int(r.b[1])
			*f = wireField{num: num, typ: typ, bytes: r.b[2 : 2+n : 2+n]}
			r.b = r.b[2+n:]
			return true
		}
	}
	return r.nextSlow(f)
}

// nextSlow is next for any field.
func (r *wireReader) nextSlow(f *wireField) bool {
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 {
		r.err = protowire.ParseError(n)
		return false
	}
	r.b = r.b[n:]
	*f = wireField{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		f.varint, n = protowire.ConsumeVarint(r.b)
	case protowire.BytesType:
		f.bytes, n = protowire.ConsumeBytes(r.b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, r.b)
	}
	if n < 0 {
		r.err = protowire.ParseError(n)
		return false
	}
	r.b = r.b[n:]
	return true
}

// want fails the read when a known field has a wire type other than its
// own, as the generated Unmarshal does.
func (r *wireReader) want(f *wireField, typ protowire.Type) bool {
	if f.typ != typ {
		r.err = fmt.Errorf("proto: wrong wire type %d for field %d", f.typ, f.num)
		return false
	}
	return true
}

// envelope splits a protobuf-encoded API object into its apiVersion, kind
// and message, without copying; ok is false when data is not one.
func envelope(data []byte) (apiVersion, kind, raw []byte, ok bool) {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return nil, nil, nil, false
	}
	r := wireReader{b: data[len(protobufPrefix):]}
	var f wireField
	for r.next(&f) {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType: // typeMeta
			apiVersion, kind = typeMeta(f.bytes)
		case f.num == 2 && f.typ == protowire.BytesType: // raw
			raw = f.bytes
		case f.num == 3 && f.typ == protowire.BytesType && len(f.bytes) > 0: // contentEncoding
			return nil, nil, nil, false
		}
	}
	return apiVersion, kind, raw, r.err == nil
}

func typeMeta(b []byte) (apiVersion, kind []byte) {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			apiVersion = f.bytes
		case f.num == 2 && f.typ == protowire.BytesType:
			kind = f.bytes
		}
	}
	return apiVersion, kind
}

// mapEntry reads one entry of a map<string, string> field.
func mapEntry(b []byte) (key, value []byte, err error) {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				key = f.bytes
			}
		case 2:
			if r.want(&f, protowire.BytesType) {
				value = f.bytes
			}
		}
	}
	return key, value, r.err
}

// maxWanted is the most labels or annotations one kind of object keeps.
const maxWanted = 3

// wireMeta is what the cache reads of an object's metadata.
type wireMeta struct {
	meta objectMeta
	// labels and annotations are the values of the wanted keys, by their
	// index in the want list; nil when absent.
	labels      [maxWanted][]byte
	annotations [maxWanted][]byte
	// initialEventsEnd: the annotation that ends a watch's initial events.
	initialEventsEnd bool
}

// readMeta reads ObjectMeta fields into m, merging as a repeated
// metadata field would. wantLabels and wantAnnotations name the keys kept,
// at most maxWanted each.
func readMeta(b []byte, m *wireMeta, wantLabels, wantAnnotations []string) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				m.meta.name = string(f.bytes)
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				// One copy of each namespace's name for all its
				// objects: thousands share a few.
				m.meta.namespace = unique.Make(string(f.bytes)).Value()
			}
		case 6:
			if r.want(&f, protowire.BytesType) {
				m.meta.resourceVersion = string(f.bytes)
			}
		case 11:
			if r.want(&f, protowire.BytesType) {
				r.err = m.keepEntry(f.bytes, &m.labels, wantLabels)
			}
		case 12:
			if r.want(&f, protowire.BytesType) {
				r.err = m.keepEntry(f.bytes, &m.annotations, wantAnnotations)
			}
		}
	}
	if m.initialEventsEnd && m.meta.name == "" {
		m.meta.markInitialEventsEnd()
	}
	return r.err
}

// keepEntry reads a map entry and keeps its value in kept, at the index of
// its key in want. It also notes the annotation that ends a watch's
// initial events, whichever map it is in: only bookmarks carry it.
func (m *wireMeta) keepEntry(b []byte, kept *[maxWanted][]byte, want []string) error {
	key, value, err := mapEntry(b)
	if err != nil {
		return err
	}
	if value == nil {
		value = []byte{} // present, and empty
	}
	if string(key) == metav1.InitialEventsAnnotationKey && kept == &m.annotations {
		m.initialEventsEnd = string(value) == "true"
	}
	for i, w := range want {
		if string(key) == w {
			kept[i] = value
		}
	}
	return nil
}

// parseAddr parses an address; dotted IPv4, by far the most common, without
// making a string of it. Anything else goes to netip.ParseAddr, which
// decides.
func parseAddr(b []byte) (netip.Addr, error) {
	if a, ok := parseDottedQuad(b); ok {
		return a, nil
	}
	return netip.ParseAddr(string(b))
}

// parseDottedQuad accepts exactly four decimal fields of 0–255 without
// leading zeros: a subset of what netip.ParseAddr accepts, with the same
// value.
func parseDottedQuad(b []byte) (netip.Addr, bool) {
	var ip [4]byte
	field, digits, val := 0, 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits > 0 && val == 0 {
				return netip.Addr{}, false // a leading zero
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return netip.Addr{}, false
			}
		case c == '.' && digits > 0 && field < 3:
			ip[field] = byte(val)
			field, digits, val = field+1, 0, 0
		default:
			return netip.Addr{}, false
		}
	}
	if field != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	ip[3] = byte(val)
	return netip.AddrFrom4(ip), true
}
