package watchcache

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// randomPod is a pod as the API writes one, with the bulk DNS does not
// read (spec, container statuses, managed fields) and addresses of every
// kind: dual stack, only podIP, none, unparsable, IPv4-mapped.
func randomPod(rng *rand.Rand) *corev1.Pod {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-%d", rng.IntN(1000)), Namespace: pick("default", "team-a"), UID: "7a2b", ResourceVersion: fmt.Sprint(rng.IntN(1 << 30)),
			CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0)), Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:podIPs":{}}}`)}},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", SchedulerName: "default-scheduler", Containers: []corev1.Container{{
			Name: "web", Image: "registry.example/web:1.2.3", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "198.18.0.1",
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, Image: "registry.example/web:1.2.3", ContainerID: "containerd://abc"}}},
	}
	switch rng.IntN(5) {
	case 0:
		p.Status.PodIP = pick("10.1.0.2", "fd00::2", "bogus")
	case 1:
		p.Status.PodIP = "10.1.0.3"
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.1.0.3"}, {IP: pick("fd00::3", "::ffff:10.1.0.4", "x")}}
	case 2:
		p.Status.PodIPs = []corev1.PodIP{{IP: pick("10.1.0.010", "bogus")}}
		p.Status.PodIP = pick("", "10.1.0.5")
	case 3:
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.1.0.6"}}
	}
	return p
}

// TestDecodePodMatchesConversion: the protobuf read field by field gives
// what the conversion of the generated type gives, for random pods and
// lists of them.
func TestDecodePodMatchesConversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	d := protobufDecoder(false)
	for i := range 3000 {
		p := randomPod(rng)
		want, _ := toPod(p.DeepCopy())
		got, _, err := d.Decode(encodeProtobuf(t, p), nil, nil)
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pod %d:\n got %+v\nwant %+v\nfrom %+v", i, got, want, p.Status)
		}
	}
	for i := range 30 {
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(i + 7), Continue: []string{"", "next"}[i%2]}}
		for range rng.IntN(20) {
			l.Items = append(l.Items, *randomPod(rng))
		}
		want := d.convert(l.DeepCopy())
		got, _, err := d.Decode(encodeProtobuf(t, l), nil, nil)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("list %d: %v\n got %+v\nwant %+v", i, err, got, want)
		}
	}
}

// FuzzDecodePod: whatever the generated Unmarshal reads, decodePod reads
// to the same cached pod, or refuses it with a protobuf error; it never
// panics.
func FuzzDecodePod(f *testing.F) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 8 {
		raw, _ := randomPod(rng).Marshal()
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodePod(raw)
		var p corev1.Pod
		if p.Unmarshal(raw) != nil {
			return
		}
		if err != nil {
			if strings.HasPrefix(err.Error(), "proto:") {
				return // stricter on the wire than gogo: a clear error
			}
			t.Fatalf("the generated Unmarshal reads it, decodePod says %v", err)
		}
		want, _ := toPod(&p)
		if !reflect.DeepEqual(any(got), want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
}
