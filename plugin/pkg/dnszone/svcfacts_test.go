package dnszone

import (
	"net/netip"
	"slices"
	"testing"
)

// TestHostEndpoints: a host name matches the endpoints named so (a
// hostname, or the dashed address of one without), in its group.
func TestHostEndpoints(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	svc := NewHeadless("db.ns1", []EndpointFacts{
		NewEndpoint(a("10.0.0.2"), "", 1, true),
		NewEndpoint(a("10.0.0.1"), "pet-0", 0, true),
		NewEndpoint(a("fd00::1"), "pet-0", 0, true),
		NewEndpoint(a("10.0.0.3"), "", 0, false),
	}, nil, []Group{{Suffix: ".a"}, {Suffix: ".b"}})
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"pet-0.a", []string{"10.0.0.1", "fd00::1"}},
		{"pet-0.b", nil},
		{"10-0-0-2.b", []string{"10.0.0.2"}},
		{"10-0-0-2.a", nil},
		{"10-0-0-3.a", nil}, // unnamed
		{"010-0-0-2.b", nil},
		{"pet-0", nil},
	} {
		var got []string
		for _, i := range svc.appendHostEndpoints(nil, tc.prefix) {
			got = append(got, svc.endpoints[i].Addr().String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

// TestCountTargets: SRV targets are the distinct host names, an explicit
// hostname that spells another endpoint's address included.
func TestCountTargets(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	for _, tc := range []struct {
		eps  []EndpointFacts
		want int
	}{
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "", 0, true), NewEndpoint(a("10.0.0.2"), "", 0, true)}, 2},
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "pet-0", 0, true), NewEndpoint(a("fd00::1"), "pet-0", 0, true)}, 1},
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "", 0, true), NewEndpoint(a("10.0.0.2"), "10-0-0-1", 0, true)}, 1},
		{[]EndpointFacts{NewEndpoint(a("10.0.0.1"), "", 0, false), NewEndpoint(a("10.0.0.2"), "pet-1", 0, true)}, 1},
	} {
		svc := NewHeadless("db.ns1", tc.eps, nil, nil)
		if listed := len(svc.srvTargets(all(svc))); listed != tc.want {
			t.Errorf("%v: listed %d targets, want %d", tc.eps, listed, tc.want)
		}
	}
}
