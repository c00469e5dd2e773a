package multicluster

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

// TestLocalAddrsClaims follows the claim count of addresses that two local
// services name, as each changes: an address stays claimed while either
// names it, and set reports only what changed for the service.
func TestLocalAddrsClaims(t *testing.T) {
	a, b, c := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fd00::1")
	l := newLocalAddrs()
	steps := []struct {
		name    string
		addrs   []netip.Addr
		changed []netip.Addr
		claimed []netip.Addr
	}{
		{"x", []netip.Addr{b, a, a}, []netip.Addr{a, b}, []netip.Addr{a, b}},
		{"y", []netip.Addr{a, c}, []netip.Addr{a, c}, []netip.Addr{a, b, c}},
		{"x", []netip.Addr{b}, []netip.Addr{a}, []netip.Addr{a, b, c}},
		{"y", nil, []netip.Addr{a, c}, []netip.Addr{b}},
		{"x", nil, []netip.Addr{b}, nil},
	}
	for i, s := range steps {
		changed := l.set(kubesource.Key{Namespace: "ns", Name: s.name}, slices.Clone(s.addrs))
		slices.SortFunc(changed, netip.Addr.Compare)
		if !slices.Equal(changed, s.changed) {
			t.Errorf("step %d: set(%s, %v) changed %v, want %v", i, s.name, s.addrs, changed, s.changed)
		}
		for _, ip := range []netip.Addr{a, b, c} {
			if got, want := l.claimed(ip), slices.Contains(s.claimed, ip); got != want {
				t.Errorf("step %d: claimed(%s) = %t, want %t", i, ip, got, want)
			}
		}
	}
	if len(l.claims) != 0 || len(l.byService) != 0 {
		t.Errorf("left behind: claims %v, byService %v", l.claims, l.byService)
	}
}
