package watchcache

import (
	"bytes"
	"fmt"
	"net/http"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// EndpointSlices are decoded straight into their cached form, in the
// client that reads them: the reflector then lists and watches
// *EndpointSlice, and the generated type is never made. Every replica of
// the DNS server reads every change of every slice in the cluster, and
// the generated Unmarshal was most of what a change cost.

// sliceGroupVersion is the EndpointSlice API the cache reads.
var sliceGroupVersion = discoveryv1.SchemeGroupVersion

// sliceClient is a REST client of discovery.k8s.io/v1 whose decoders give
// cached EndpointSlices; it shares the connection and rate limiter of rc
// and hc.
func sliceClient(rc *rest.Config, hc *http.Client, podNames bool) (rest.Interface, error) {
	c := protobuf(rc)
	c.GroupVersion = &sliceGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = sliceSerializers{NegotiatedSerializer: rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(), podNames: podNames}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("create EndpointSlice client: %w", err)
	}
	return client, nil
}

// sliceSerializers are the client's usual serializers, each with a
// decoder that gives cached EndpointSlices.
type sliceSerializers struct {
	runtime.NegotiatedSerializer
	podNames bool
}

func (s sliceSerializers) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := append([]runtime.SerializerInfo(nil), s.NegotiatedSerializer.SupportedMediaTypes()...)
	for i := range infos {
		infos[i].Serializer = sliceDecoder{Serializer: infos[i].Serializer, podNames: s.podNames}
	}
	return infos
}

// sliceDecoder decodes EndpointSlices and their lists into the cached
// form: the protobuf encoding field by field (decodeSlice), any other
// through the generated type and convertSlice. Other objects (a Status in
// an error) are decoded as usual.
type sliceDecoder struct {
	runtime.Serializer
	podNames bool
}

var (
	sliceKind     = sliceGroupVersion.WithKind("EndpointSlice")
	sliceListKind = sliceGroupVersion.WithKind("EndpointSliceList")
)

func (d sliceDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into == nil {
		if obj, gvk, ok, err := d.decodeWire(data); ok {
			return obj, gvk, err
		}
	}
	obj, gvk, err := d.Serializer.Decode(data, defaults, into)
	if err != nil {
		return obj, gvk, err
	}
	switch o := obj.(type) {
	case *discoveryv1.EndpointSlice:
		converted, err := convertSlice(o, d.podNames)
		return converted.(runtime.Object), gvk, err
	case *discoveryv1.EndpointSliceList:
		return d.convertList(o), gvk, nil
	}
	return obj, gvk, nil
}

// decodeWire decodes a protobuf EndpointSlice or EndpointSliceList; ok is
// false for anything else.
func (d sliceDecoder) decodeWire(data []byte) (obj runtime.Object, gvk *schema.GroupVersionKind, ok bool, err error) {
	apiVersion, kind, raw, ok := envelope(data)
	if !ok || !bytes.Equal(apiVersion, []byte(sliceGroupVersion.String())) {
		return nil, nil, false, nil
	}
	switch string(kind) {
	case sliceKind.Kind:
		s, err := decodeSlice(raw, d.podNames)
		return s, &sliceKind, true, wireError(err)
	case sliceListKind.Kind:
		l, err := decodeSliceList(raw, d.podNames)
		return l, &sliceListKind, true, wireError(err)
	}
	return nil, nil, false, nil
}

func wireError(err error) error {
	if err != nil {
		return fmt.Errorf("decode EndpointSlice: %w", err)
	}
	return nil
}

func (d sliceDecoder) convertList(l *discoveryv1.EndpointSliceList) *sliceList {
	out := &sliceList{ListMeta: l.ListMeta, Items: make([]*EndpointSlice, 0, len(l.Items))}
	for i := range l.Items {
		s, _ := convertSlice(&l.Items[i], d.podNames)
		out.Items = append(out.Items, s.(*EndpointSlice))
	}
	return out
}

// GetObjectKind implements runtime.Object: the list is typed by Go type.
func (l *sliceList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object; the list is never modified.
func (l *sliceList) DeepCopyObject() runtime.Object { return l }

var _ metav1.ListInterface = (*sliceList)(nil)
