package kubesource

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slice converts an EndpointSlice as the informers do.
func slice(t *testing.T, name string, labels map[string]string, typ discoveryv1.AddressType, eps ...discoveryv1.Endpoint) *watchcache.EndpointSlice {
	t.Helper()
	c, err := watchcache.Convert(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels},
		AddressType: typ, Endpoints: eps,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c.(*watchcache.EndpointSlice)
}

func endpoint(addr string, ready, terminating bool, hostname ...string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Terminating: &terminating}}
	if len(hostname) > 0 {
		e.Hostname = &hostname[0]
	}
	return e
}

// TestServedEndpoints shows which addresses of a service's slices DNS
// serves: the ready ones (and the unready ones with publishNotReady), never
// the terminating ones, each address once, from the first slice in name
// order, sorted by address across IPv4 and IPv6 slices.
func TestServedEndpoints(t *testing.T) {
	own := map[string]string{discoveryv1.LabelServiceName: "web"}
	ss := []*watchcache.EndpointSlice{
		slice(t, "web-c-dup", own, discoveryv1.AddressTypeIPv4, endpoint("10.1.0.1", true, false)),
		slice(t, "web-a-v4", own, discoveryv1.AddressTypeIPv4,
			endpoint("10.1.0.2", true, false, "web-0"),
			endpoint("10.1.0.1", true, false),
			endpoint("10.1.0.3", false, false),
			endpoint("10.1.0.4", false, true)),
		slice(t, "web-b-v6", own, discoveryv1.AddressTypeIPv6,
			endpoint("fd00:1::1", true, false), endpoint("fd00:1::2", false, false)),
	}
	for _, tc := range []struct {
		publishNotReady bool
		extra           []EndpointAddr
	}{
		{},
		{publishNotReady: true, extra: []EndpointAddr{
			{Addr: netip.MustParseAddr("10.1.0.3"), Slice: "web-a-v4"},
			{Addr: netip.MustParseAddr("fd00:1::2"), Slice: "web-b-v6"},
		}},
	} {
		var dups []string
		got := ServedEndpoints(ss, tc.publishNotReady, func(kept, dropped EndpointAddr) {
			dups = append(dups, fmt.Sprintf("%s kept from %s, dropped from %s", kept.Addr, kept.Slice, dropped.Slice))
		})
		want := append([]EndpointAddr{
			{Addr: netip.MustParseAddr("10.1.0.1"), Slice: "web-a-v4"},
			{Addr: netip.MustParseAddr("10.1.0.2"), Hostname: "web-0", Slice: "web-a-v4"},
			{Addr: netip.MustParseAddr("fd00:1::1"), Slice: "web-b-v6"},
		}, tc.extra...)
		slices.SortFunc(want, func(a, b EndpointAddr) int { return a.Addr.Compare(b.Addr) })
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ServedEndpoints(publishNotReady=%t):\n got %+v\nwant %+v", tc.publishNotReady, got, want)
		}
		if wantDups := []string{"10.1.0.1 kept from web-a-v4, dropped from web-c-dup"}; !slices.Equal(dups, wantDups) {
			t.Errorf("duplicates = %q, want %q", dups, wantDups)
		}
	}
}

// TestServedEndpointsAcrossClusters: an address two member clusters claim
// is served once, from the first cluster in name order.
func TestServedEndpointsAcrossClusters(t *testing.T) {
	from := func(cluster string) map[string]string {
		return map[string]string{watchcache.LabelMultiClusterServiceName: "db", watchcache.LabelSourceCluster: cluster}
	}
	ss := []*watchcache.EndpointSlice{
		slice(t, "db-west", from("west"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.1", true, false), endpoint("10.3.0.2", true, false)),
		slice(t, "db-east", from("east"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.1", true, false)),
	}
	got := ServedEndpoints(ss, false, nil)
	want := []EndpointAddr{
		{Addr: netip.MustParseAddr("10.3.0.1"), Cluster: "east", Slice: "db-east"},
		{Addr: netip.MustParseAddr("10.3.0.2"), Cluster: "west", Slice: "db-west"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ServedEndpoints:\n got %+v\nwant %+v", got, want)
	}
	if ServedEndpoints(nil, false, nil) != nil {
		t.Error("no slices: want nil")
	}
}
