package watchcache

import (
	"bytes"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/encoding/protowire"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Services, EndpointSlices and Pods are decoded straight into their cached
// form, in the clients that read them: the reflectors then list and watch
// *Service, *EndpointSlice and *Pod, and the generated types are never
// made.
// Every replica of the DNS server reads every change of every slice and
// service in the cluster, and the generated Unmarshal was most of what a
// change cost, and most of the start-up.

// wireClients are the REST clients whose decoders give cached objects.
type wireClients struct {
	core   rest.Interface // core/v1: Services and Pods
	slices rest.Interface
	// known are the informers' stores, which their decoders read.
	known *knownObjects
}

func newWireClients(rc *rest.Config, hc *http.Client, podNames bool) (wireClients, error) {
	known := newKnownObjects()
	core, err := wireClient(rc, hc, corev1.SchemeGroupVersion, "/api", podNames, known)
	if err != nil {
		return wireClients{}, fmt.Errorf("create core/v1 client: %w", err)
	}
	slices, err := wireClient(rc, hc, discoveryv1.SchemeGroupVersion, "/apis", podNames, known)
	if err != nil {
		return wireClients{}, fmt.Errorf("create EndpointSlice client: %w", err)
	}
	return wireClients{core: core, slices: slices, known: known}, nil
}

// wireClient is a REST client of gv whose decoders give cached objects; it
// shares the connection and rate limiter of rc and hc.
func wireClient(rc *rest.Config, hc *http.Client, gv schema.GroupVersion, apiPath string, podNames bool, known *knownObjects) (rest.Interface, error) {
	c := protobuf(rc)
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = wireSerializers{NegotiatedSerializer: rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(),
		podNames: podNames, known: known}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientForConfigAndClient(c, hc)
}

// wireSerializers are the client's usual serializers, each with a decoder
// that gives cached objects.
type wireSerializers struct {
	runtime.NegotiatedSerializer
	podNames bool
	known    *knownObjects
}

func (s wireSerializers) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := append([]runtime.SerializerInfo(nil), s.NegotiatedSerializer.SupportedMediaTypes()...)
	for i := range infos {
		infos[i].Serializer = wireDecoder{Serializer: infos[i].Serializer, podNames: s.podNames, known: s.known}
		if st := infos[i].StreamSerializer; st != nil && infos[i].MediaType == runtime.ContentTypeProtobuf {
			c := *st
			c.Serializer = watchEventDecoder{Serializer: st.Serializer}
			infos[i].StreamSerializer = &c
		}
	}
	return infos
}

// watchEventDecoder reads a protobuf watch frame into a metav1.WatchEvent
// whose object's bytes are the frame's own, not a copy: client-go decodes
// that object (with wireDecoder, into the cached form, which keeps none of
// its bytes) before it reads the next frame into the same buffer. The
// generated Unmarshal copied every event's object, some 2 KB an update of a
// ten-endpoint slice. Anything else goes to the usual serializer.
type watchEventDecoder struct {
	runtime.Serializer
}

func (d watchEventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if ev, ok := into.(*metav1.WatchEvent); ok {
		if typ, raw, ok := watchEvent(data); ok {
			ev.Type, ev.Object = typ, runtime.RawExtension{Raw: raw}
			return ev, nil, nil
		}
	}
	return d.Serializer.Decode(data, defaults, into)
}

// watchEvent reads a metav1.WatchEvent: its type, one of the five a watch
// sends, and its object's bytes, within data. ok is false for anything
// else, which the generated Unmarshal then decides about.
func watchEvent(data []byte) (typ string, raw []byte, ok bool) {
	r := wireReader{b: data}
	var f wireField
	for r.next(&f) {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			if typ = eventType(f.bytes); typ == "" {
				return "", nil, false
			}
		case f.num == 2 && f.typ == protowire.BytesType: // RawExtension
			if raw, ok = rawExtension(f.bytes); !ok {
				return "", nil, false
			}
		default:
			return "", nil, false
		}
	}
	return typ, raw, r.err == nil && typ != "" && raw != nil
}

// eventType is the watch.EventType named b, as a constant (no string is
// made); "" for any other.
func eventType(b []byte) string {
	for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if string(b) == string(t) {
			return string(t)
		}
	}
	return ""
}

// rawExtension is the raw field of a runtime.RawExtension; nil when it has
// none.
func rawExtension(b []byte) (raw []byte, ok bool) {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		if f.num != 1 || f.typ != protowire.BytesType {
			return nil, false
		}
		raw = f.bytes
	}
	return raw, r.err == nil
}

// wireDecoder decodes Services, EndpointSlices, Pods and their lists into
// the cached form: the protobuf encoding field by field (decodeService,
// decodeSlice, decodePod), any other through the generated types and
// their conversion. Other objects (the Status of an error) are decoded as
// usual.
type wireDecoder struct {
	runtime.Serializer
	podNames bool
	// known (nil for none) gives an object already stored at the same
	// resourceVersion instead of a new one (known.go).
	known *knownObjects
}

var (
	coreAPIVersion  = []byte(corev1.SchemeGroupVersion.String())
	sliceAPIVersion = []byte(discoveryv1.SchemeGroupVersion.String())
)

func (d wireDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into == nil {
		if obj, err := d.decodeWire(data); obj != nil || err != nil {
			return obj, nil, err
		}
	}
	obj, gvk, err := d.Serializer.Decode(data, defaults, into)
	if err != nil {
		return obj, gvk, err
	}
	return d.convert(obj), gvk, nil
}

// decodeWire decodes a protobuf Service, EndpointSlice, Pod or list of one;
// nil, nil for anything else.
func (d wireDecoder) decodeWire(data []byte) (runtime.Object, error) {
	apiVersion, kind, raw, ok := envelope(data)
	if !ok {
		return nil, nil
	}
	var obj runtime.Object
	var err error
	slice := func(b []byte) (*EndpointSlice, error) { return decodeKnown(d.known, "EndpointSlice", b, d.decodeSlice) }
	service := func(b []byte) (*Service, error) { return decodeKnown(d.known, "Service", b, decodeService) }
	pod := func(b []byte) (*Pod, error) { return decodeKnown(d.known, "Pod", b, decodePod) }
	switch {
	case bytes.Equal(apiVersion, sliceAPIVersion) && string(kind) == "EndpointSlice":
		obj, err = slice(raw)
	case bytes.Equal(apiVersion, sliceAPIVersion) && string(kind) == "EndpointSliceList":
		l := &sliceList{}
		l.Items, err = readList(raw, &l.ListMeta, slice)
		obj = l
	case bytes.Equal(apiVersion, coreAPIVersion) && string(kind) == "Service":
		obj, err = service(raw)
	case bytes.Equal(apiVersion, coreAPIVersion) && string(kind) == "ServiceList":
		l := &serviceList{}
		l.Items, err = readList(raw, &l.ListMeta, service)
		obj = l
	case bytes.Equal(apiVersion, coreAPIVersion) && string(kind) == "Pod":
		obj, err = pod(raw)
	case bytes.Equal(apiVersion, coreAPIVersion) && string(kind) == "PodList":
		l := &podList{}
		l.Items, err = readList(raw, &l.ListMeta, pod)
		obj = l
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return obj, nil
}

func (d wireDecoder) decodeSlice(b []byte) (*EndpointSlice, error) { return decodeSlice(b, d.podNames) }

// decodeKnown is the stored object raw encodes, when known has it at the
// same resourceVersion, else decode's.
func decodeKnown[T any](known *knownObjects, kind string, raw []byte, decode func([]byte) (*T, error)) (*T, error) {
	if old, ok := known.stored(kind, raw).(*T); ok {
		return old, nil
	}
	return decode(raw)
}

// convert is the cached form of a Service, EndpointSlice, Pod or list of
// one decoded as generated types (JSON); anything else as it is.
func (d wireDecoder) convert(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *corev1.Service:
		s, _ := toService(o)
		return s.(*Service)
	case *corev1.ServiceList:
		out := &serviceList{ListMeta: o.ListMeta, Items: make([]*Service, 0, len(o.Items))}
		for i := range o.Items {
			out.Items = append(out.Items, d.convert(&o.Items[i]).(*Service))
		}
		return out
	case *discoveryv1.EndpointSlice:
		s, _ := convertSlice(o, d.podNames)
		return s.(*EndpointSlice)
	case *discoveryv1.EndpointSliceList:
		out := &sliceList{ListMeta: o.ListMeta, Items: make([]*EndpointSlice, 0, len(o.Items))}
		for i := range o.Items {
			out.Items = append(out.Items, d.convert(&o.Items[i]).(*EndpointSlice))
		}
		return out
	case *corev1.Pod:
		p, _ := toPod(o)
		return p.(*Pod)
	case *corev1.PodList:
		out := &podList{ListMeta: o.ListMeta, Items: make([]*Pod, 0, len(o.Items))}
		for i := range o.Items {
			out.Items = append(out.Items, d.convert(&o.Items[i]).(*Pod))
		}
		return out
	}
	return obj
}

// GetObjectKind implements runtime.Object: the list is typed by Go type.
func (l *sliceList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object; the list is never modified.
func (l *sliceList) DeepCopyObject() runtime.Object { return l }

// GetObjectKind implements runtime.Object: the list is typed by Go type.
func (l *serviceList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object; the list is never modified.
func (l *serviceList) DeepCopyObject() runtime.Object { return l }

// GetObjectKind implements runtime.Object: the list is typed by Go type.
func (l *podList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object; the list is never modified.
func (l *podList) DeepCopyObject() runtime.Object { return l }

var (
	_ metav1.ListInterface = (*sliceList)(nil)
	_ metav1.ListInterface = (*serviceList)(nil)
	_ metav1.ListInterface = (*podList)(nil)
)
