package watchcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
)

// knownDecoder is the protobuf wire decoder reading known.
func knownDecoder(known *knownObjects) wireDecoder {
	info, _ := runtime.SerializerInfoForMediaType(wireSerializers{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), known: known}.SupportedMediaTypes(),
		runtime.ContentTypeProtobuf)
	return info.Serializer.(wireDecoder)
}

// TestDecodeKnown: an object the store holds at the same resourceVersion
// decodes to the stored object itself, alone or in a list; at another
// resourceVersion, or absent, to a new one; a store dropped is no longer
// read.
func TestDecodeKnown(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	known := newKnownObjects()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	known.set("Pod", store)
	d := knownDecoder(known)
	var pods []*corev1.Pod
	for i := range 4 {
		p := randomPod(rng)
		p.Name, p.ResourceVersion = fmt.Sprintf("web-%d", i), "100"
		pods = append(pods, p)
		cached, _ := toPod(p.DeepCopy())
		if err := store.Add(cached); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(i int) any { o, _, _ := store.GetByKey(pods[i].Namespace + "/" + pods[i].Name); return o }

	got, _, err := d.Decode(encodeProtobuf(t, pods[0]), nil, nil)
	if err != nil || got != stored(0) {
		t.Errorf("a stored pod at its resourceVersion decoded to %p (%v), want the stored %p", got, err, stored(0))
	}
	changed := pods[1].DeepCopy()
	changed.ResourceVersion = "101"
	if got, _, _ := d.Decode(encodeProtobuf(t, changed), nil, nil); got == stored(1) {
		t.Error("a pod at a new resourceVersion decoded to the stored one")
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "200"}, Items: []corev1.Pod{*pods[2], *changed, *pods[3]}}
	l, _, err := d.Decode(encodeProtobuf(t, list), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := l.(*podList).Items
	if len(items) != 3 || any(items[0]) != stored(2) || any(items[1]) == stored(1) || any(items[2]) != stored(3) ||
		items[1].GetResourceVersion() != "101" {
		t.Errorf("list decoded to %v: want the stored pods 2 and 3 and a new pod 1", items)
	}
	known.drop("Pod", store)
	if got, _, _ := d.Decode(encodeProtobuf(t, pods[0]), nil, nil); got == stored(0) {
		t.Error("a dropped store was read")
	}
}

// TestRelistReusesUnchanged: after the informers sync, a LIST through the
// cache's own clients (as a relist makes) gives the cached objects
// themselves for every object unchanged, and a new one for the one that
// changed: a relist holds what changed, not the cache twice.
func TestRelistReusesUnchanged(t *testing.T) {
	e := newEnv(t, "wc-known")
	for i := range 3 {
		e.createService(clusterIPService(fmt.Sprintf("web-%d", i)))
		e.createSlice(slice(fmt.Sprintf("web-%d-a", i), forService(fmt.Sprintf("web-%d", i)), "IPv4", endpoint(fmt.Sprintf("10.9.0.%d", i+1), true, false)))
	}
	h := e.acquire(Services | EndpointSlices)
	eventually(t, settle, "three slices cached", func() bool { return len(h.SlicesForService(e.ns, "web-2")) == 1 },
		func() string { return fmt.Sprint(len(h.SlicesForService(e.ns, "web-2"))) })
	list, err := h.wire.slices.Get().Namespace(e.ns).Resource("endpointslices").Do(e.ctx).Get()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.(*sliceList).Items {
		if cached := h.SlicesForService(e.ns, s.Service); len(cached) != 1 || cached[0] != s {
			t.Errorf("slice %s: listed %p, cached %v: want the cached object itself", s.Name(), s, cached)
		}
	}
	services, err := h.wire.core.Get().Namespace(e.ns).Resource("services").Do(e.ctx).Get()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range services.(*serviceList).Items {
		if s != h.Service(e.ns, s.Name()) {
			t.Errorf("service %s: listed %p, not the cached %p", s.Name(), s, h.Service(e.ns, s.Name()))
		}
	}
	// One slice changes: once cached, a list gives the new cached object
	// for it, and the same old ones for the others.
	before := h.SlicesForService(e.ns, "web-0")[0]
	cur, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Get(e.ctx, "web-1-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Endpoints = slice("web-1-a", forService("web-1"), "IPv4", endpoint("10.9.0.9", true, false)).Endpoints
	if _, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Update(e.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "the change cached", func() bool {
		return h.SlicesForService(e.ns, "web-1")[0].Endpoints[0].Addresses[0].String() == "10.9.0.9"
	},
		func() string { return fmt.Sprint(h.SlicesForService(e.ns, "web-1")[0].Endpoints) })
	list, err = h.wire.slices.Get().Namespace(e.ns).Resource("endpointslices").Do(e.ctx).Get()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.(*sliceList).Items {
		cached := h.SlicesForService(e.ns, s.Service)[0]
		if cached != s || (s.Service == "web-0" && s != before) {
			t.Errorf("slice %s after a change: listed %p, cached %p", s.Name(), s, cached)
		}
	}
}

// TestPagedListsArePages: a relist of a plain resource is a consistent
// read of listPageSize objects a page, whatever resourceVersion the
// reflector asked (the last one it saw, answered whole from the API
// server's watch cache otherwise); its next pages keep the page size; the
// first list, at resourceVersion "0", stays whole.
func TestPagedListsArePages(t *testing.T) {
	var got []metav1.ListOptions
	lw := paged(&cache.ListWatch{ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
		got = append(got, o)
		return &metav1.List{}, nil
	}})
	for _, o := range []metav1.ListOptions{
		{ResourceVersion: "0", Limit: 500},
		{ResourceVersion: "352719"},
		{ResourceVersion: "352719", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 500},
		{ResourceVersion: ""},
		{Continue: "token", Limit: 500},
		{Continue: "token"},
	} {
		if _, err := lw.ListWithContext(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	want := []metav1.ListOptions{
		{ResourceVersion: "0", Limit: 500},
		{Limit: listPageSize}, {Limit: listPageSize}, {Limit: listPageSize},
		{Continue: "token", Limit: 500}, {Continue: "token", Limit: listPageSize},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lists asked:\n%+v\nwant\n%+v", got, want)
	}
	if listerOf(lw, false).IsWatchListSemanticsUnSupported() || !listerOf(lw, true).IsWatchListSemanticsUnSupported() {
		t.Error("listerOf: a streamed resource must take the watch-list, a plain one must not")
	}
}

// TestPagedListCountsOnce: a list read in pages is one list (and a later
// one one relist), counted when its last page is in, not a list per page.
func TestPagedListCountsOnce(t *testing.T) {
	pages := []string{"p2", "p3", ""}
	n := 0
	s := newConnState(Services)
	lw := paged(s.instrument(&cache.ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		l := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: pages[n%len(pages)]}}
		n++
		return l, nil
	}}))
	for i := range 6 { // two lists of three pages
		if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{Continue: pages[(i+2)%3]}); err != nil {
			t.Fatal(err)
		}
		if want := (i + 1) / 3; s.plainLists != want {
			t.Fatalf("after page %d: %d lists counted, want %d", i+1, s.plainLists, want)
		}
	}
}
