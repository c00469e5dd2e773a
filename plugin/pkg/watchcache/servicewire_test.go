package watchcache

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// randomService is a Service with the fields the conversion reads in every
// form they take (types, "None", dual-stack, external and ingress IPs,
// trailing dots, upper case) and the bulk it does not.
func randomService(rng *rand.Rand) *corev1.Service {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("svc-%d", rng.IntN(1000)), Namespace: pick("default", "team-a"), UID: "0b5a7f5e", ResourceVersion: fmt.Sprint(rng.IntN(1 << 30)),
			CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0)), Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{}", 50)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:ports":{}}}`)}},
		},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceType(pick("ClusterIP", "ClusterIP", "ExternalName", "LoadBalancer", "NodePort", "")),
			ClusterIP:       pick("10.96.0.10", "None", "", "fd00::a", "bogus"),
			SessionAffinity: corev1.ServiceAffinityNone, IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack),
			InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
		},
	}
	switch rng.IntN(3) {
	case 0:
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	case 1:
		s.Spec.ClusterIPs = []string{pick("10.96.0.11", "::ffff:10.0.0.1", "x"), pick("fd00::b", "None")}
	}
	if rng.IntN(2) == 0 {
		s.Spec.Selector = map[string]string{pick("app", ""): "web"}
	}
	switch rng.IntN(4) {
	case 0:
		s.Annotations[AnnotationTolerateUnready] = pick("true", "false", "")
	case 1:
		s.Annotations[annotationTriggerTime] = pick("2026-11-25T10:00:00.5Z", "yesterday")
	}
	s.Spec.ExternalName = pick("", "db.example.com.", "DB.Example.COM", ".")
	s.Spec.PublishNotReadyAddresses = rng.IntN(3) == 0
	for range rng.IntN(4) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: pick("", "http", "DNS-TCP"), Protocol: corev1.Protocol(pick("TCP", "UDP", "SCTP", "", "Odd")),
			Port: int32(rng.IntN(70000)) - 100, TargetPort: intstr.FromInt32(8080), NodePort: 30000, AppProtocol: ptr("http")})
	}
	for range rng.IntN(3) {
		s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, pick("192.0.2.1", "2001:db8::1", "::ffff:192.0.2.2", "nope"))
	}
	for range rng.IntN(3) {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: pick("", "198.51.100.7", "bad"), Hostname: pick("", "lb.example.com")})
	}
	if rng.IntN(4) == 0 {
		s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ok", LastTransitionTime: metav1.NewTime(time.Unix(1, 0))}}
	}
	return s
}

// TestDecodeServiceMatchesConversion: the protobuf read field by field
// gives what toService gives, for random services and lists of them.
func TestDecodeServiceMatchesConversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	d := protobufDecoder(false)
	for i := range 3000 {
		s := randomService(rng)
		want, _ := toService(s.DeepCopy())
		got, _, err := d.Decode(encodeProtobuf(t, s), nil, nil)
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("service %d:\n got %+v\nwant %+v\nfrom %+v", i, got, want, s)
		}
	}
	for i := range 30 {
		l := &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(i + 7), Continue: []string{"", "next"}[i%2]}}
		for range rng.IntN(20) {
			l.Items = append(l.Items, *randomService(rng))
		}
		want := d.convert(l.DeepCopy())
		got, _, err := d.Decode(encodeProtobuf(t, l), nil, nil)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("list %d: %v\n got %+v\nwant %+v", i, err, got, want)
		}
	}
}

// FuzzDecodeService: any bytes are read without a panic, and whatever both
// the generated Unmarshal and decodeService accept is read the same as its
// conversion.
func FuzzDecodeService(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 8 {
		raw, _ := randomService(rng).Marshal()
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeService(raw)
		var s corev1.Service
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
			t.Fatalf("the generated Unmarshal reads it, decodeService says %v", err)
		}
		want, _ := toService(&s)
		if !reflect.DeepEqual(any(got), want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
}
