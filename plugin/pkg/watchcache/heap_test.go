package watchcache

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkStoreHeap reports the heap the informer stores take, objects
// and indexes, for the benchmark fixture's shape (docs/benchmarks.md):
// 10k services, one in ten headless, an EndpointSlice of 10 ready
// endpoints each, 20k pods. Run it alone, with -short (no API server):
//
//	go test -short -run '^$' -bench StoreHeap -benchtime 1x ./plugin/pkg/watchcache
func BenchmarkStoreHeap(b *testing.B) {
	const services, perService, pods = 10000, 10, 20000
	for b.Loop() {
		var total float64
		for _, k := range []Resources{Services, EndpointSlices, Pods} {
			heap := storeHeap(b, k, func(add func(any)) {
				for i := range services {
					switch k {
					case Services:
						add(heapService(i, perService))
					case EndpointSlices:
						add(heapSlice(i, perService))
					}
				}
				for i := range pods {
					if k == Pods {
						add(heapPod(i))
					}
				}
			})
			b.ReportMetric(heap, resourceNames[k]+"-MiB")
			total += heap
		}
		b.ReportMetric(total, "stores-MiB")
	}
}

// storeHeap fills a store and the kind's indexes as the informer would
// (the cached form, store, indexes) and returns the live heap they hold,
// in MiB.
func storeHeap(b *testing.B, k Resources, fill func(add func(any))) float64 {
	before := liveHeap()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	idx := newIndexes(k)
	fill(func(obj any) {
		t, err := Convert(obj.(k8sruntime.Object))
		if err == nil {
			err = store.Add(t)
		}
		if err != nil {
			b.Fatal(err)
		}
		idx.update(nil, t)
	})
	after := liveHeap()
	runtime.KeepAlive(store)
	runtime.KeepAlive(idx)
	return float64(after-before) / (1 << 20)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func heapNames(i int) (ns, name string, headless bool) {
	headless = i%10 == 9
	name = fmt.Sprintf("svc-%05d", i)
	if headless {
		name = fmt.Sprintf("hl-%05d", i)
	}
	return fmt.Sprintf("bench-%03d", i/100), name, headless
}

// heapAddr is the address of endpoint e, from 10.64.0.0 as in bench/.
func heapAddr(e int) string {
	return netip.AddrFrom4([4]byte{10, byte(64 + e>>16), byte(e >> 8), byte(e)}).String()
}

func heapService(i, perService int) *corev1.Service {
	ns, name, headless := heapNames(i)
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(1000 + i)}}
	s.Spec.ClusterIP = netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}).String()
	if headless {
		s.Spec.ClusterIP = corev1.ClusterIPNone
	}
	s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	s.Spec.Selector = map[string]string{"app": name}
	s.Spec.Ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}, {Name: "https", Protocol: corev1.ProtocolTCP, Port: 443}}
	return s
}

func heapSlice(i, perService int) *discoveryv1.EndpointSlice {
	ns, name, headless := heapNames(i)
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", ResourceVersion: fmt.Sprint(50000 + i), Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, p := range []string{"http", "https"} {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptrTo(p), Protocol: ptrTo(corev1.ProtocolTCP), Port: ptrTo(int32(8080))})
	}
	ready := true
	for j := range perService {
		e := i*perService + j
		ep := discoveryv1.Endpoint{Addresses: []string{heapAddr(e)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("pod-%06d", e)}}
		if headless {
			ep.Hostname = ptrTo(fmt.Sprintf("%s-%d", name, j))
		}
		s.Endpoints = append(s.Endpoints, ep)
	}
	return s
}

func heapPod(k int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("bench-%03d", k/1000), Name: fmt.Sprintf("pod-%06d", k), ResourceVersion: fmt.Sprint(90000 + k)}}
	p.Status.PodIP = heapAddr(k)
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	return p
}

func ptrTo[T any](v T) *T { return &v }
