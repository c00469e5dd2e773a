package watchcache

import (
	"fmt"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// TestSlicesFromTheWire: against the real API server, the slice client
// gets protobuf and gives cached slices for a list and a watch, and the
// informer caches slices both ways it can list (a watch that streams the
// initial list, and a plain list).
func TestSlicesFromTheWire(t *testing.T) {
	e := newEnv(t, "wc-wire")
	e.cfg.EndpointPodNames = true
	e.createSlice(slice("web-a", forService("web"), discoveryv1.AddressTypeIPv4,
		endpoint("10.1.0.2", true, false, pod("web-0")), endpoint("10.1.0.3", false, true)))
	h := e.acquire(EndpointSlices)

	var contentType string
	list, err := h.slices.Get().Namespace(e.ns).Resource("endpointslices").Do(e.ctx).ContentType(&contentType).Get()
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := list.(*sliceList); contentType != "application/vnd.kubernetes.protobuf" || !ok || len(l.Items) != 1 || l.ResourceVersion == "" {
		t.Fatalf("list: %s, %#v", contentType, list)
	}
	w, err := h.slices.Get().Namespace(e.ns).Resource("endpointslices").Param("watch", "true").Param("resourceVersion", "0").Watch(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	if s, ok := ev.Object.(*EndpointSlice); !ok || s.Name() != "web-a" {
		t.Fatalf("watch event: %#v", ev)
	}
	h.Release() // its informer stops: each run below starts its own

	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch-list %v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			h := e.acquire(Services | EndpointSlices)
			got := h.SlicesForService(e.ns, "web")
			if len(got) != 1 || len(got[0].Endpoints) != 2 {
				t.Fatalf("cached: %+v", got)
			}
			eps := got[0].Endpoints
			if eps[0].Addresses[0].String() != "10.1.0.2" || !eps[0].Ready || eps[0].PodName != "web-0" ||
				eps[1].Addresses[0].String() != "10.1.0.3" || eps[1].Ready || !eps[1].Terminating {
				t.Errorf("cached endpoints %+v", eps)
			}
			h.Release()
		})
	}
}
