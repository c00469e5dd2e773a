package watchcache

import (
	"fmt"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// TestFromTheWire: against the real API server, the slice and service
// clients get protobuf and give cached objects for a list and a watch, and
// the informers cache them both ways they can list (a watch that streams
// the initial list, and a plain list).
func TestFromTheWire(t *testing.T) {
	e := newEnv(t, "wc-wire")
	e.cfg.EndpointPodNames = true
	e.createSlice(slice("web-a", forService("web"), discoveryv1.AddressTypeIPv4,
		endpoint("10.1.0.2", true, false, pod("web-0")), endpoint("10.1.0.3", false, true)))
	svc := e.createService(clusterIPService("web"))
	h := e.acquire(Services | EndpointSlices)

	var contentType string
	list, err := h.wire.slices.Get().Namespace(e.ns).Resource("endpointslices").Do(e.ctx).ContentType(&contentType).Get()
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := list.(*sliceList); contentType != "application/vnd.kubernetes.protobuf" || !ok || len(l.Items) != 1 || l.ResourceVersion == "" {
		t.Fatalf("list: %s, %#v", contentType, list)
	}
	w, err := h.wire.slices.Get().Namespace(e.ns).Resource("endpointslices").Param("watch", "true").Param("resourceVersion", "0").Watch(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	if s, ok := ev.Object.(*EndpointSlice); !ok || s.Name() != "web-a" {
		t.Fatalf("watch event: %#v", ev)
	}
	services, err := h.wire.core.Get().Namespace(e.ns).Resource("services").Do(e.ctx).ContentType(&contentType).Get()
	if l, ok := services.(*serviceList); err != nil || contentType != "application/vnd.kubernetes.protobuf" || !ok || len(l.Items) != 1 {
		t.Fatalf("services: %s, %#v, %v", contentType, services, err)
	}
	h.Release() // its informers stop: each run below starts its own

	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient %v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			h := e.acquire(Services | EndpointSlices | Pods)
			if s := h.Service(e.ns, "web"); s == nil || s.Kind != ClusterIP || len(s.ClusterIPs) != 1 || s.ClusterIPs[0].String() != svc.Spec.ClusterIP ||
				len(s.Ports) != 1 || s.Ports[0] != (Port{Name: "http", Protocol: "tcp", Port: 80}) {
				t.Fatalf("cached service: %+v", s)
			}
			got := h.SlicesForService(e.ns, "web")
			if len(got) != 1 || len(got[0].Endpoints) != 2 {
				t.Fatalf("cached: %+v", got)
			}
			eps := got[0].Endpoints
			if eps[0].Addresses[0].String() != "10.1.0.2" || !eps[0].Ready || eps[0].PodName != "web-0" ||
				eps[1].Addresses[0].String() != "10.1.0.3" || eps[1].Ready || !eps[1].Terminating {
				t.Errorf("cached endpoints %+v", eps)
			}
			// Services and slices are listed with a plain LIST whatever the
			// gate says; pods as the gate says (listerWatcher).
			for k, want := range map[Resources]int{Services: 1, EndpointSlices: 1, Pods: map[bool]int{true: 0, false: 1}[watchList]} {
				st := h.informers[k].state
				st.mu.Lock()
				n := st.plainLists
				st.mu.Unlock()
				if n != want {
					t.Errorf("%s: %d plain lists, want %d", resourceNames[k], n, want)
				}
			}
			h.Release()
		})
	}
}
