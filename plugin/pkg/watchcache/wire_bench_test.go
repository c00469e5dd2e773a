package watchcache

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
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
				FieldsV1: metav1.NewFieldsV1(`{"f:addressType":{},"f:endpoints":{},"f:metadata":{"f:annotations":{".":{},"f:endpoints.kubernetes.io/last-change-trigger-time":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:endpointslice.kubernetes.io/managed-by":{},"f:kubernetes.io/service-name":{},"f:service.kubernetes.io/headless":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"3c1f1b0c\"}":{}}},"f:ports":{}}`)}},
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

// BenchmarkDecodeService is the same for a ClusterIP Service as kubectl
// applies it (last-applied annotation, managedFields).
func BenchmarkDecodeService(b *testing.B) {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", UID: "0b5a7f5e-1d63-4e45-9b6e-3c1f1b0c9a10", ResourceVersion: "123456",
			CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0)), Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{},"labels":{"app":"web"},"name":"web","namespace":"team-a"},"spec":{"ports":[{"name":"http","port":80,"targetPort":8080}],"selector":{"app":"web"}}}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: ptr(metav1.NewTime(time.Unix(1700000000, 0))), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:internalTrafficPolicy":{},"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}`)}},
		},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.12.34", ClusterIPs: []string{"10.96.12.34"},
			Selector: map[string]string{"app": "web"}, SessionAffinity: corev1.ServiceAffinityNone,
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack),
			InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	data := encodeProtobuf(b, svc)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj, _, err := info.Serializer.Decode(data, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := toService(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	d := protobufDecoder(false)
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := d.Decode(data, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
