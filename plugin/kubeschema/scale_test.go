package kubeschema

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// scaleSource is a source indexed like the cache, for benchmarks at the
// scale of docs/benchmarks.md (memSource scans, too slow for 10k).
type scaleSource struct {
	services map[string]*kubesource.Service
	slices   map[string][]*kubesource.EndpointSlice
}

func (s *scaleSource) Services() []*kubesource.Service {
	out := make([]*kubesource.Service, 0, len(s.services))
	for _, svc := range s.services {
		out = append(out, svc)
	}
	return out
}

func (s *scaleSource) Service(ns, name string) *kubesource.Service { return s.services[ns+"/"+name] }
func (s *scaleSource) ServiceCIDRs() []*kubesource.ServiceCIDR     { return nil }

func (s *scaleSource) SlicesForService(ns, name string) []*kubesource.EndpointSlice {
	return s.slices[ns+"/"+name]
}

func (s *scaleSource) Namespace(string) *kubesource.Namespace { return nil }

func (s *scaleSource) PodsByIP(netip.Addr) []*kubesource.Pod { return nil }

// scaleFixture is the benchmark's cluster: n services of two named ports
// in namespaces of 100, one in ten headless, each with a slice of 10 ready
// endpoints (hostnames on the headless ones).
func scaleFixture(tb testing.TB, n int) *scaleSource {
	s := &scaleSource{services: map[string]*kubesource.Service{}, slices: map[string][]*kubesource.EndpointSlice{}}
	for i := range n {
		s.set(tb, i, 10)
	}
	return s
}

// set (re)creates service i with endpoints endpoints.
func (s *scaleSource) set(tb testing.TB, i, endpoints int) (ns, name string) {
	ns, name = fmt.Sprintf("bench-%03d", i/100), fmt.Sprintf("svc-%05d", i)
	hl := i%10 == 9
	var svc *corev1.Service
	if hl {
		name = fmt.Sprintf("hl-%05d", i)
		svc = service(ns, name, headless(corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80},
			corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443}))
	} else {
		svc = service(ns, name, clusterIP(netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}).String()))
	}
	var eps []ep
	for j := range endpoints {
		e := i*10 + j
		x := ep{addr: netip.AddrFrom4([4]byte{10, byte(64 + e>>16), byte(e >> 8), byte(e)}).String(), pod: fmt.Sprintf("pod-%06d", e)}
		if hl {
			x.host = fmt.Sprintf("%s-%d", name, j)
		}
		eps = append(eps, x)
	}
	m := &memSource{}
	m.Add(tb, svc, slice(ns, name+"-abcde", name, discoveryv1.AddressTypeIPv4, eps...))
	s.services[ns+"/"+name] = m.Services()[0]
	s.slices[ns+"/"+name] = m.EndpointSlices()
	return ns, name
}

func scalePlugin(src cacheReader) *Kubeschema {
	k := newKubeschema()
	k.Zones = []string{"cluster.local.", "in-addr.arpa.", "ip6.arpa."}
	k.NSAddrs = []netip.Addr{netip.MustParseAddr("10.96.0.10")}
	k.data = src
	return k
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkSnapshotHeap reports the heap of a full snapshot at 10k
// services (the service facts and PTR index, without the cache's objects):
//
//	go test -run '^$' -bench SnapshotHeap -benchtime 1x ./plugin/kubeschema
func BenchmarkSnapshotHeap(b *testing.B) {
	src := scaleFixture(b, 10000)
	k := scalePlugin(src)
	for b.Loop() {
		before := liveHeap()
		snap := newBuilder(k, src).fullBuild()
		after := liveHeap()
		runtime.KeepAlive(snap)
		b.ReportMetric(float64(after-before)/(1<<20), "snapshot-MiB")
	}
}

// BenchmarkApplyOneChange is the builder's cost of one change batch at 10k
// services: a headless service gains an endpoint, or a service comes or
// goes; what a programming latency run sees after the watch event.
//
//	go test -run '^$' -bench ApplyOneChange -benchmem ./plugin/kubeschema
func BenchmarkApplyOneChange(b *testing.B) {
	src := scaleFixture(b, 10000)
	k := scalePlugin(src)
	bl := newBuilder(k, src)
	k.Publish(bl.fullBuild())
	for _, c := range []struct {
		name string
		i    int
	}{{"headless", 19}, {"clusterip", 20}} {
		b.Run(c.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n++
				ns, name := src.set(b, c.i, 10+n%2)
				bl.Mark(kubesource.Event{Resource: kubesource.EndpointSlices, Namespace: ns, Service: name, Changed: time.Now()})
				bl.Apply()
			}
		})
	}
}
