package watchcache

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// protobufStream is the stream serializer the slice client reads protobuf
// watch frames with, and the generated one.
func protobufStream(t testing.TB) (ours, generated runtime.Serializer) {
	t.Helper()
	find := func(infos []runtime.SerializerInfo) runtime.Serializer {
		info, ok := runtime.SerializerInfoForMediaType(infos, runtime.ContentTypeProtobuf)
		if !ok || info.StreamSerializer == nil {
			t.Fatal("no protobuf stream serializer")
		}
		return info.StreamSerializer.Serializer
	}
	return find(wireSerializers{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}.SupportedMediaTypes()),
		find(scheme.Codecs.SupportedMediaTypes())
}

// encodeEvent is a watch frame as the API server writes it: the event,
// its object in the protobuf envelope.
func encodeEvent(t testing.TB, typ watch.EventType, raw []byte) []byte {
	t.Helper()
	b, err := (&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWatchEventDecoder: every event type reads as the generated Unmarshal
// reads it, with the object's bytes those of the frame, not a copy.
func TestWatchEventDecoder(t *testing.T) {
	ours, generated := protobufStream(t)
	if _, ok := ours.(watchEventDecoder); !ok {
		t.Fatalf("the slice client's protobuf stream serializer is %T", ours)
	}
	obj := encodeProtobuf(t, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-a", Namespace: "ns"}})
	for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		frame := encodeEvent(t, typ, obj)
		var got, want metav1.WatchEvent
		if _, _, err := ours.Decode(frame, nil, &got); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if _, _, err := generated.Decode(frame, nil, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", typ, got, want)
		}
		raw := got.Object.Raw
		if start := uintptr(unsafe.Pointer(&frame[0])); uintptr(unsafe.Pointer(&raw[0])) < start || uintptr(unsafe.Pointer(&raw[0])) >= start+uintptr(len(frame)) {
			t.Errorf("%s: the object's bytes are a copy", typ)
		}
	}
}

// TestWatchEventDecoderFallsBack: what is not a well-formed event of a
// known type is the generated Unmarshal's to decide: the same result or
// error.
func TestWatchEventDecoderFallsBack(t *testing.T) {
	ours, generated := protobufStream(t)
	for name, frame := range map[string][]byte{
		"unknown type":  encodeEvent(t, "RENAMED", []byte("k8s\x00")),
		"no object":     encodeEvent(t, watch.Added, nil),
		"empty object":  encodeEvent(t, watch.Added, []byte{}),
		"truncated":     encodeEvent(t, watch.Added, bytes.Repeat([]byte{1}, 300))[:20],
		"unknown field": append(encodeEvent(t, watch.Added, []byte("x")), 0x18, 0x01),
	} {
		var got, want metav1.WatchEvent
		_, _, gotErr := ours.Decode(frame, nil, &got)
		_, _, wantErr := generated.Decode(frame, nil, &want)
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", name, got, gotErr, want, wantErr)
		}
	}
}

// FuzzWatchEvent: any frame is read without a panic, and what watchEvent
// accepts the generated Unmarshal reads the same.
func FuzzWatchEvent(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Bookmark, "X"} {
		raw := make([]byte, rng.IntN(300))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		f.Add(encodeEvent(f, typ, raw))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		typ, raw, ok := watchEvent(frame)
		if !ok {
			return
		}
		var want metav1.WatchEvent
		if err := want.Unmarshal(frame); err != nil {
			t.Fatalf("watchEvent read %q, %q of a frame Unmarshal refuses: %v", typ, raw, err)
		}
		if want.Type != typ || !bytes.Equal(want.Object.Raw, raw) {
			t.Fatalf("watchEvent %q %q, Unmarshal %q %q", typ, raw, want.Type, want.Object.Raw)
		}
	})
}
