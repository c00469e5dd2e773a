package main

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// testShape is tiny: two headless services and one ClusterIP.
var testShape = shape{Name: "T", ClusterIP: 1, Headless: 2, Endpoints: 3}

func startTest(t *testing.T, updates int) (*encoded, *apiServer, kubernetes.Interface) {
	t.Helper()
	c := newCluster(testShape)
	c.plan(updates)
	enc := encode(c)
	api, err := startAPIServer(enc, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.close)
	rc := &rest.Config{Host: "http://" + api.addr}
	rc.ContentType, rc.AcceptContentTypes = protobufType, protobufType
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return enc, api, cs
}

// addrs are a slice's addresses as numbers.
func addrs(sl *discoveryv1.EndpointSlice) []uint32 {
	var out []uint32
	for _, e := range sl.Endpoints {
		out = append(out, dnsload.AddrNum(mustAddr(e.Addresses[0])))
	}
	return out
}

// TestInformerAbsorbs runs a client-go informer, as both servers do
// (watch-list by default), against the fake server: it syncs every slice
// and, once the updates are released, ends with each changed slice at
// its final state.
func TestInformerAbsorbs(t *testing.T) {
	enc, api, cs := startTest(t, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lw := cache.NewListWatchFromClient(cs.DiscoveryV1().RESTClient(), "endpointslices", metav1.NamespaceAll, fields.Everything())
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &discoveryv1.EndpointSlice{},
		Handler: cache.ResourceEventHandlerFuncs{}})
	go ctrl.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
		t.Fatal("no sync")
	}
	if n := len(store.List()); n != testShape.services() {
		t.Fatalf("%d slices synced, want %d", n, testShape.services())
	}
	if got := api.counts()["WATCH-LIST endpointslices"]; got != 1 {
		t.Errorf("requests %v: want one watch-list of endpointslices", api.counts())
	}
	api.feed()
	for _, n := range enc.model.changed {
		sl := enc.cluster.slices[n.service]
		for {
			obj, ok, _ := store.Get(sl)
			if ok && dnsload.SetHash(addrs(obj.(*discoveryv1.EndpointSlice))) == dnsload.SetHash(n.final) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never reached its final state", sl.Name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestListThenWatch is the path of a client without watch-list: a list at
// the base version, then a watch from it gets every update in order.
func TestListThenWatch(t *testing.T) {
	enc, api, cs := startTest(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := cs.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != testShape.services() || list.ResourceVersion != strconv.FormatInt(enc.cluster.baseRV, 10) {
		t.Fatalf("list: %d items at %s", len(list.Items), list.ResourceVersion)
	}
	w, err := cs.DiscoveryV1().EndpointSlices("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	api.feed()
	for k, u := range enc.cluster.updates {
		ev := <-w.ResultChan()
		sl, ok := ev.Object.(*discoveryv1.EndpointSlice)
		if ev.Type != watch.Modified || !ok {
			t.Fatalf("event %d: %s %T", k, ev.Type, ev.Object)
		}
		if sl.Name != enc.cluster.slices[u.Service].Name || sl.Endpoints[u.Endpoint].Addresses[0] != dnsload.NumAddr(u.Addr) {
			t.Errorf("event %d: %s with %v, want %s's endpoint %d at %s", k, sl.Name, sl.Endpoints[u.Endpoint].Addresses, enc.cluster.slices[u.Service].Name, u.Endpoint, dnsload.NumAddr(u.Addr))
		}
		if want := enc.cluster.baseRV + 1 + int64(k); sl.ResourceVersion != strconv.FormatInt(want, 10) {
			t.Errorf("event %d: resourceVersion %s, want %d", k, sl.ResourceVersion, want)
		}
	}
	// A watch from a version before the log is gone, as the API server
	// says of a compacted one.
	_, err = cs.DiscoveryV1().EndpointSlices("").Watch(ctx, metav1.ListOptions{ResourceVersion: "10"})
	if err == nil {
		t.Error("a watch from a version before the base succeeded")
	}
}

// TestFrameEnvelope checks a watch frame's layers against what kube-apiserver
// 1.36 sends for an EndpointSlice (read off a real one): a 4-byte length,
// a metav1.WatchEvent, its object "k8s\x00" and a runtime.Unknown with
// apiVersion discovery.k8s.io/v1, kind EndpointSlice and no content type
// or encoding of its own.
func TestFrameEnvelope(t *testing.T) {
	c := newCluster(testShape)
	f := frame(watch.Modified, encodeObject(c.slices[0], discoveryGV), discoveryGV)
	if n := binary.BigEndian.Uint32(f); int(n) != len(f)-4 {
		t.Fatalf("length %d, frame of %d bytes", n, len(f)-4)
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(f[4:]); err != nil || ev.Type != "MODIFIED" {
		t.Fatalf("WatchEvent %s: %v", ev.Type, err)
	}
	raw := ev.Object.Raw
	if string(raw[:4]) != "k8s\x00" {
		t.Fatalf("object prefix %q", raw[:4])
	}
	var u runtime.Unknown
	if err := u.Unmarshal(raw[4:]); err != nil {
		t.Fatal(err)
	}
	if u.APIVersion != "discovery.k8s.io/v1" || u.Kind != "EndpointSlice" || u.ContentType != "" || u.ContentEncoding != "" {
		t.Errorf("envelope %+v, content type %q, encoding %q", u.TypeMeta, u.ContentType, u.ContentEncoding)
	}
	var sl discoveryv1.EndpointSlice
	if err := sl.Unmarshal(u.Raw); err != nil || sl.Name != c.slices[0].Name || len(sl.Endpoints) != testShape.Endpoints {
		t.Errorf("slice %s with %d endpoints: %v", sl.Name, len(sl.Endpoints), err)
	}
}
