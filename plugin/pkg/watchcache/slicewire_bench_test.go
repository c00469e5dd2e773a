package watchcache

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// controllerSlice is a headless service's slice of n endpoints as the
// EndpointSlice controller writes it, metadata and all.
func controllerSlice(n int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-abcde", Namespace: "team-a", UID: "0b5a7f5e-1d63-4e45-9b6e-3c1f1b0c9a10", ResourceVersion: "123456",
			Generation: 7, CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0)), GenerateName: "web-",
			Labels: map[string]string{LabelServiceName: "web", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
				"app": "web", "service.kubernetes.io/headless": ""},
			Annotations:     map[string]string{annotationTriggerTime: "2026-11-25T10:00:00.123456Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "3c1f1b0c", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "discovery.k8s.io/v1", Time: ptr(metav1.NewTime(time.Unix(1700000000, 0))), FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:addressType":{},"f:endpoints":{},"f:metadata":{"f:annotations":{".":{},"f:endpoints.kubernetes.io/last-change-trigger-time":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:endpointslice.kubernetes.io/managed-by":{},"f:kubernetes.io/service-name":{},"f:service.kubernetes.io/headless":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"3c1f1b0c\"}":{}}},"f:ports":{}}`)}}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr(int32(8080))}},
	}
	for i := range n {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)},
			Hostname:   ptr(fmt.Sprintf("web-%d", i)),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "team-a", Name: fmt.Sprintf("web-%d", i), UID: "9b6e-3c1f1b0c9a10-0b5a7f5e-1d63-4e45"},
			NodeName:   ptr("node-1"),
			Zone:       ptr("zone-a"),
		})
	}
	return s
}

// BenchmarkDecodeSlice is the decoding of one EndpointSlice as a watch
// event carries it (10 and 100 endpoints): "generated" is the generated
// Unmarshal and the conversion, as before; "wire" reads the fields the
// cache keeps.
func BenchmarkDecodeSlice(b *testing.B) {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	for _, n := range []int{10, 100} {
		data := encodeProtobuf(b, controllerSlice(n))
		b.Run(fmt.Sprintf("generated/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				obj, _, err := info.Serializer.Decode(data, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := convertSlice(obj, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		d := protobufDecoder(true)
		b.Run(fmt.Sprintf("wire/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, _, err := d.Decode(data, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
