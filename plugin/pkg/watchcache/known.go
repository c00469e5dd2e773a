package watchcache

import (
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// knownObjects give the wire decoders the objects the informers hold, so
// that a relist decodes only what changed: an object listed again with the
// resourceVersion its stored copy has is the stored copy, the same
// pointer. A relist (after an API server restart, a watch too old) lists
// every object of a resource; without this, each was decoded anew and
// held beside the store's until the store was replaced: the cache twice
// over at the relist's peak. With it the relist holds what changed, and
// the LIST or stream it is read from. It costs a decode one lookup.
type knownObjects struct {
	mu sync.RWMutex
	// stores by the protobuf kind of their objects ("Service",
	// "EndpointSlice", "Pod").
	stores map[string]storeReader
}

func newKnownObjects() *knownObjects { return &knownObjects{stores: map[string]storeReader{}} }

// set makes s the store of kind's objects; drop forgets it if it still is.
func (k *knownObjects) set(kind string, s storeReader) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stores[kind] = s
}

func (k *knownObjects) drop(kind string, s storeReader) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stores[kind] == s {
		delete(k.stores, kind)
	}
}

// stored is the object of kind that raw (its protobuf, without the
// envelope) encodes, when the store holds it at the same
// resourceVersion; nil otherwise. Nothing is allocated: the key is made on
// the stack.
func (k *knownObjects) stored(kind string, raw []byte) any {
	if k == nil {
		return nil
	}
	k.mu.RLock()
	s := k.stores[kind]
	k.mu.RUnlock()
	if s == nil {
		return nil
	}
	ns, name, rv, ok := metaKey(raw)
	if !ok || len(rv) == 0 || len(name) == 0 || len(ns)+1+len(name) > 512 {
		return nil
	}
	var buf [512]byte
	key := append(buf[:0], ns...)
	if len(ns) > 0 {
		key = append(key, '/')
	}
	key = append(key, name...)
	obj, found, _ := s.GetByKey(unsafe.String(unsafe.SliceData(key), len(key)))
	if !found {
		return nil
	}
	if m, ok := obj.(interface{ GetResourceVersion() string }); ok && m.GetResourceVersion() == string(rv) {
		return obj
	}
	return nil
}

// metaKey reads the namespace, name and resourceVersion of an object's
// metadata (field 1 of every object; ObjectMeta's fields 3, 1 and 6),
// within raw.
func metaKey(raw []byte) (ns, name, rv []byte, ok bool) {
	r := wireReader{b: raw}
	var f wireField
	for r.next(&f) {
		if f.num != 1 || f.typ != protowire.BytesType {
			continue
		}
		m := wireReader{b: f.bytes}
		var g wireField
		for m.next(&g) {
			if g.typ != protowire.BytesType {
				continue
			}
			switch g.num {
			case 1:
				name = g.bytes
			case 3:
				ns = g.bytes
			case 6:
				rv = g.bytes
			}
		}
		return ns, name, rv, m.err == nil
	}
	return nil, nil, nil, false
}
