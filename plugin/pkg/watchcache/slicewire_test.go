package watchcache

import (
	"bytes"
	"fmt"
	golog "log"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// randomSlice is an EndpointSlice with every field the API may send, and
// the odd values the conversion has to handle: bad and mixed-family
// addresses, upper case, absent conditions, no address type.
func randomSlice(rng *rand.Rand) *discoveryv1.EndpointSlice {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	maybe := func(v string) *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		return &v
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-%d", rng.IntN(1000)), Namespace: pick("default", "team-a", ""),
			UID: types.UID("0b5a7f5e-1d63-4e45-9b6e-3c1f1b0c9a10"), ResourceVersion: fmt.Sprint(rng.IntN(1 << 30)),
			Generation: 3, CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0)),
			Labels:          map[string]string{"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
			Annotations:     map[string]string{"note": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "u"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "discovery.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:addressType":{},"f:endpoints":{}}`)}},
		},
		AddressType: discoveryv1.AddressType(pick("IPv4", "IPv4", "IPv6", "FQDN", "")),
	}
	if rng.IntN(4) > 0 {
		s.Labels[LabelServiceName] = pick("web", "Web", "")
	}
	if rng.IntN(4) == 0 {
		s.Labels[LabelMultiClusterServiceName] = "imported"
		s.Labels[LabelSourceCluster] = pick("cluster-a", "")
	}
	switch rng.IntN(3) {
	case 0:
		s.Annotations[annotationTriggerTime] = time.Unix(1700000000, int64(rng.IntN(1e9))).UTC().Format(time.RFC3339Nano)
	case 1:
		s.Annotations[annotationTriggerTime] = "not a time"
	}
	bools := []*bool{nil, ptr(true), ptr(false)}
	for range rng.IntN(12) {
		e := discoveryv1.Endpoint{
			Conditions:         discoveryv1.EndpointConditions{Ready: bools[rng.IntN(3)], Serving: bools[rng.IntN(3)], Terminating: bools[rng.IntN(3)]},
			Hostname:           maybe(pick("db-0", "DB-1", "")),
			NodeName:           maybe("node-1"),
			Zone:               maybe(pick("zone-a", "zone-b", "")),
			DeprecatedTopology: map[string]string{"a": "b"},
		}
		for range 1 + rng.IntN(3)*rng.IntN(2) {
			e.Addresses = append(e.Addresses, pick("10.1.2.3", "10.0.0.255", "192.168.1.1", "fd00::1", "2001:db8::a",
				"01.2.3.4", "1.2.3", "1.2.3.4.5", "256.1.1.1", "::ffff:1.2.3.4", "fe80::1%eth0", "x", "", "1.2.3.4 "))
		}
		if rng.IntN(3) > 0 {
			e.TargetRef = &corev1.ObjectReference{Kind: pick("Pod", "Node", ""), Namespace: "default", Name: pick("Web-0", "web-1"), UID: "u2"}
		}
		if rng.IntN(4) == 0 {
			e.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}}
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	protocols := []*corev1.Protocol{nil, ptr(corev1.ProtocolTCP), ptr(corev1.ProtocolUDP), ptr(corev1.ProtocolSCTP), ptr(corev1.Protocol("Weird"))}
	for range rng.IntN(3) {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: maybe(pick("http", "HTTP", "")), Protocol: protocols[rng.IntN(len(protocols))],
			Port: []*int32{nil, ptr(int32(80)), ptr(int32(-1))}[rng.IntN(3)], AppProtocol: maybe("h2c")})
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// encodeProtobuf is obj as the API server sends it in protobuf.
func encodeProtobuf(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, gvks[0].GroupVersion()).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func protobufDecoder(podNames bool) wireDecoder {
	info, _ := runtime.SerializerInfoForMediaType(wireSerializers{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), podNames: podNames}.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	return info.Serializer.(wireDecoder)
}

// TestDecodeSliceMatchesConversion: the protobuf read field by field gives
// what the conversion of the generated type gives, for random slices.
func TestDecodeSliceMatchesConversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, podNames := range []bool{true, false} {
		d := protobufDecoder(podNames)
		for i := range 2000 {
			s := randomSlice(rng)
			want, _ := convertSlice(s.DeepCopy(), podNames)
			got, _, err := d.Decode(encodeProtobuf(t, s), nil, nil)
			if err != nil {
				t.Fatalf("slice %d: %v", i, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("slice %d (pod names %v):\n got %+v\nwant %+v\nfrom %+v", i, podNames, got, want, s)
			}
		}
	}
}

// TestDecodeSliceListMatchesConversion: the same for lists, with their
// metadata.
func TestDecodeSliceListMatchesConversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := protobufDecoder(true)
	for i := range 50 {
		l := &discoveryv1.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(i + 100), Continue: []string{"", "tok"}[i%2]}}
		if i%3 == 0 {
			l.RemainingItemCount = ptr(int64(i))
		}
		for range rng.IntN(20) {
			l.Items = append(l.Items, *randomSlice(rng))
		}
		want := d.convert(l.DeepCopy())
		got, _, err := d.Decode(encodeProtobuf(t, l), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("list %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

// TestDecodeSliceFallsBack: JSON, and objects that are not slices (the
// Status of a watch's error event), are decoded by the usual decoder; a
// JSON slice is converted.
func TestDecodeSliceFallsBack(t *testing.T) {
	s := randomSlice(rand.New(rand.NewPCG(5, 6)))
	s.AddressType = discoveryv1.AddressTypeIPv4
	s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}
	want, _ := convertSlice(s.DeepCopy(), true)
	info, _ := runtime.SerializerInfoForMediaType(wireSerializers{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), podNames: true}.SupportedMediaTypes(), runtime.ContentTypeJSON)
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, discoveryv1.SchemeGroupVersion).Encode(s, &buf); err != nil {
		t.Fatal(err)
	}
	got, _, err := info.Serializer.Decode(buf.Bytes(), nil, nil)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("JSON: got %+v, %v; want %+v", got, err, want)
	}
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	info, _ = runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	buf.Reset()
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion).Encode(status, &buf); err != nil {
		t.Fatal(err)
	}
	got, _, err = protobufDecoder(true).Decode(buf.Bytes(), nil, nil)
	if st, ok := got.(*metav1.Status); err != nil || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("Status: got %#v, %v", got, err)
	}
}

// TestDecodeSliceBookmark: the bookmark that ends a watch's initial events
// still says so to the reflector, decoded either way; other objects carry
// no annotations. Neither it nor the periodic bookmark of a watch (a
// resource version and nothing else, about every minute) is warned of as
// a slice of no service.
func TestDecodeSliceBookmark(t *testing.T) {
	warned.Clear() // whatever other tests warned of is warned of again
	var logged bytes.Buffer
	golog.SetOutput(&logged)
	t.Cleanup(func() { golog.SetOutput(os.Stderr) })
	bookmark := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	periodic := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}}
	for name, obj := range map[string]runtime.Object{"bookmark": bookmark, "periodic": periodic, "named": &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Name: "web", ResourceVersion: "42", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}} {
		wantEnd := name == "bookmark"
		wantQuiet := name != "named"
		fromWire, _, err := protobufDecoder(true).Decode(encodeProtobuf(t, obj), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		converted, _ := convertSlice(obj, true)
		for how, got := range map[string]any{"wire": fromWire, "converted": converted} {
			m, ok := got.(metav1.Object)
			if !ok || m.GetResourceVersion() != "42" || (m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true") != wantEnd {
				t.Errorf("%s %s: annotations %v, resource version %q", name, how, m.GetAnnotations(), m.GetResourceVersion())
			}
		}
		// A bookmark is no slice: nothing to warn of. The named object is
		// a slice of no service and no address type, and says so.
		if got := logged.String(); (got == "") != wantQuiet {
			t.Errorf("%s: logged %q", name, got)
		}
		logged.Reset()
	}
}

// TestParseDottedQuad: what the fast path accepts, netip.ParseAddr accepts
// with the same value.
func TestParseDottedQuad(t *testing.T) {
	for _, in := range []string{"1.2.3.4", "0.0.0.0", "255.255.255.255", "10.0.0.1", "01.2.3.4", "1.2.3.04", "256.0.0.1",
		"1.2.3", "1.2.3.4.", ".1.2.3", "1..2.3", "1.2.3.4.5", "1.2.3.-4", "1.2.3.4x", "", "1000.1.1.1", "0.0.0.00"} {
		got, ok := parseDottedQuad([]byte(in))
		want, err := parseAddr([]byte(in))
		if ok && (err != nil || got != want) {
			t.Errorf("%q: fast path %v, netip %v %v", in, got, want, err)
		}
		if !ok && in == "1.2.3.4" {
			t.Errorf("%q: fast path refused it", in)
		}
	}
}

// FuzzDecodeSlice: any bytes are read without a panic, and whatever both
// the generated Unmarshal and decodeSlice accept is read the same as its
// conversion.
func FuzzDecodeSlice(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		raw, _ := randomSlice(rng).Marshal()
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeSlice(raw, true)
		var s discoveryv1.EndpointSlice
		if s.Unmarshal(raw) != nil {
			return
		}
		if err != nil {
			// Stricter on the wire than gogo's Unmarshal is fine (a
			// varint past 64 bits, an end-group marker of another
			// field, a field number past 2^29): a clear error, never a
			// record. Any other refusal of what it reads is a bug.
			if strings.HasPrefix(err.Error(), "proto:") {
				return
			}
			t.Fatalf("the generated Unmarshal reads it, decodeSlice says %v", err)
		}
		want, _ := convertSlice(&s, true)
		if !reflect.DeepEqual(any(got), want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
}
