package main

import (
	"bytes"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// The encoding is the API server's for a client that asks for protobuf
// (k8s.io/apiserver/pkg/endpoints/handlers: watch.go and response.go's
// watchEncoder): a list or an object is the protobuf serializer's output
// (the "k8s\x00" magic, then a runtime.Unknown holding apiVersion, kind
// and the object's bytes); a watch event is a metav1.WatchEvent whose
// Object.Raw is the object so encoded, itself encoded by the raw protobuf
// serializer (no magic, no envelope) and written as one frame of the
// length-delimited framer (a 4-byte big-endian length, then the bytes).
const protobufType = runtime.ContentTypeProtobuf

var protoInfo = func() runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), protobufType)
	if !ok || info.StreamSerializer == nil {
		panic("client-go's scheme has no protobuf stream serializer")
	}
	return info
}()

// encodeObject is obj (a typed object or list) as the API server sends it
// in a response or embeds it in a watch event.
func encodeObject(obj runtime.Object, gv schema.GroupVersion) []byte {
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(protoInfo.Serializer, gv), obj)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", obj, err))
	}
	return b
}

// frame is one watch event as it goes on the wire: length, WatchEvent.
func frame(t watch.EventType, raw []byte, gv schema.GroupVersion) []byte {
	ev := &metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: raw}}
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(protoInfo.StreamSerializer.Serializer, gv), ev)
	if err != nil {
		panic(fmt.Sprintf("encode a watch event: %v", err))
	}
	var out bytes.Buffer
	if _, err := protoInfo.StreamSerializer.Framer.NewFrameWriter(&out).Write(b); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// resource is one listed and watched resource, encoded: its list at the
// initial resourceVersion, the same objects as the ADDED events and
// closing bookmark of a watch-list, and the events that follow.
type resource struct {
	name     string // "endpointslices"
	gv       schema.GroupVersion
	list     []byte   // the List response
	added    [][]byte // one ADDED frame per object, for sendInitialEvents
	bookmark []byte   // the BOOKMARK frame that ends the initial events
	count    int
	events   eventLog
}

// eventLog are the watch events after the initial state, back to back.
type eventLog struct {
	buf     []byte
	ends    []int // ends[k]: where event k ends in buf
	firstRV int64 // resourceVersion of event 0
}

// from is where the events after resourceVersion rv start in buf, and
// whether rv is one the log can continue from.
func (l *eventLog) from(rv int64) (int, bool) {
	k := rv - (l.firstRV - 1) // events already seen
	switch {
	case k < 0 || k > int64(len(l.ends)):
		return 0, false
	case k == 0:
		return 0, true
	}
	return l.ends[k-1], true
}

func newResource(name string, gv schema.GroupVersion, list runtime.Object, items []runtime.Object, rv int64) *resource {
	r := &resource{name: name, gv: gv, list: encodeObject(list, gv), count: len(items)}
	for _, it := range items {
		r.added = append(r.added, frame(watch.Added, encodeObject(it, gv), gv))
	}
	// The bookmark's object is an empty one of the kind with only the
	// resourceVersion and the annotation (cacher's bookmark events).
	mark := items0(list)
	acc, err := metaAccessor(mark)
	if err != nil {
		panic(err)
	}
	acc.SetResourceVersion(fmt.Sprint(rv))
	acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	r.bookmark = frame(watch.Bookmark, encodeObject(mark, gv), gv)
	r.events.firstRV = rv + 1
	return r
}

// items0 is an empty object of the kind list holds.
func items0(list runtime.Object) runtime.Object {
	switch list.(type) {
	case *corev1.ServiceList:
		return &corev1.Service{}
	case *corev1.NamespaceList:
		return &corev1.Namespace{}
	case *corev1.PodList:
		return &corev1.Pod{}
	case *discoveryv1.EndpointSliceList:
		return &discoveryv1.EndpointSlice{}
	}
	panic(fmt.Sprintf("no item kind for %T", list))
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no ObjectMeta", obj)
	}
	return o, nil
}

// encoded is a shape's cluster on the wire: every resource, the updates'
// events appended to the EndpointSlices' log, and the model the checks
// need.
type encoded struct {
	cluster   *cluster
	resources map[string]*resource // by "group/version/resource" path part: "api/v1/services"
	model     *model
	took      time.Duration
}

var (
	coreGV      = corev1.SchemeGroupVersion
	discoveryGV = discoveryv1.SchemeGroupVersion
)

// encode builds every response and event of c before any clock starts.
func encode(c *cluster) *encoded {
	start := time.Now()
	rv := c.baseRV
	e := &encoded{cluster: c, resources: map[string]*resource{}, model: newModel(c)}
	var ns, svcs, slices []runtime.Object
	nl, sl, el := &corev1.NamespaceList{}, &corev1.ServiceList{}, &discoveryv1.EndpointSliceList{}
	for _, n := range c.namespaces {
		ns, nl.Items = append(ns, n), append(nl.Items, *n)
	}
	for _, s := range c.services {
		svcs, sl.Items = append(svcs, s), append(sl.Items, *s)
	}
	for _, s := range c.slices {
		slices, el.Items = append(slices, s), append(el.Items, *s)
	}
	for _, l := range []metav1.ListInterface{nl, sl, el} {
		l.SetResourceVersion(fmt.Sprint(rv))
	}
	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(rv)}}
	e.resources["api/v1/namespaces"] = newResource("namespaces", coreGV, nl, ns, rv)
	e.resources["api/v1/services"] = newResource("services", coreGV, sl, svcs, rv)
	e.resources["api/v1/pods"] = newResource("pods", coreGV, pods, nil, rv)
	slicesRes := newResource("endpointslices", discoveryGV, el, slices, rv)
	e.resources["apis/discovery.k8s.io/v1/endpointslices"] = slicesRes

	addrs := make([][]uint32, len(c.slices))
	gen := make([]int64, len(c.slices))
	for i := range c.slices {
		for _, ep := range c.slices[i].Endpoints {
			addrs[i] = append(addrs[i], dnsload.AddrNum(mustAddr(ep.Addresses[0])))
		}
		gen[i] = c.slices[i].Generation
	}
	log := &slicesRes.events
	for k, u := range c.updates {
		addrs[u.Service][u.Endpoint] = u.Addr
		gen[u.Service]++
		obj := c.slice(u.Service, addrs[u.Service], fmt.Sprint(rv+1+int64(k)), gen[u.Service])
		log.buf = append(log.buf, frame(watch.Modified, encodeObject(obj, discoveryGV), discoveryGV)...)
		log.ends = append(log.ends, len(log.buf))
		e.model.record(u, addrs[u.Service])
	}
	e.took = time.Since(start)
	return e
}
