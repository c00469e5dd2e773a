package dnsname

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func TestReverseRoundTrip(t *testing.T) {
	for _, s := range []string{"10.96.0.1", "0.0.0.0", "255.255.255.255", "fd00:10:96::a", "2001:db8::1"} {
		a := netip.MustParseAddr(s)
		name := ReverseName(a)
		got, ok := ReverseAddr(name)
		if !ok || got != a {
			t.Errorf("%s -> %s -> %v %v", s, name, got, ok)
		}
	}
	if got := ReverseName(netip.MustParseAddr("10.3.0.1")); got != "1.0.3.10.in-addr.arpa." {
		t.Errorf("got %s", got)
	}
	if got := ReverseName(netip.MustParseAddr("2001:db8::1")); got != "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa." {
		t.Errorf("got %s", got)
	}
}

func TestReverseAddrRejects(t *testing.T) {
	for _, s := range []string{
		"1.0.3.in-addr.arpa.", "256.0.3.10.in-addr.arpa.", "01.0.3.10.in-addr.arpa.", "a.0.3.10.in-addr.arpa.",
		"1.1.0.3.10.in-addr.arpa.", "in-addr.arpa.", ".in-addr.arpa.", "1.0.3.10.in-addr.arpa",
		"1.0.0.ip6.arpa.", "g.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.",
		"10.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.", "example.com.",
	} {
		if a, ok := ReverseAddr(s); ok {
			t.Errorf("ReverseAddr(%q) = %v, want failure", s, a)
		}
	}
	if a, ok := ReverseAddr("1.0.3.10.IN-ADDR.ARPA."); !ok || a != netip.MustParseAddr("10.3.0.1") {
		t.Errorf("case: %v %v", a, ok)
	}
}

func TestDashed(t *testing.T) {
	for label, want := range map[string]string{"10-11-12-13": "10.11.12.13", "fd00--1": "fd00::1", "2001-db8-0-0-0-0-0-1": "2001:db8::1", "fd00--1-2": "fd00::1:2"} {
		a, ok := DashedAddr(label)
		if !ok || a.String() != want {
			t.Errorf("DashedAddr(%q) = %v %v", label, a, ok)
		}
		if Dashed(a) != label && label != "2001-db8-0-0-0-0-0-1" {
			t.Errorf("Dashed(%v) = %s", a, Dashed(a))
		}
	}
	for _, bad := range []string{"10-11-12", "10-11-12-256", "1-2-3-4-5", "a-b-c-d", "", "-", "fd00-1", "10-011-12-13"} {
		if a, ok := DashedAddr(bad); ok {
			t.Errorf("DashedAddr(%q) = %v, want failure", bad, a)
		}
	}
}

func TestTrimZone(t *testing.T) {
	cases := []struct {
		name, zone, rest string
		ok               bool
	}{
		{"cluster.local.", "cluster.local.", "", true},
		{"a.B.Cluster.Local.", "cluster.local.", "a.B", true},
		{"xcluster.local.", "cluster.local.", "", false},
		{"local.", "cluster.local.", "", false},
	}
	for _, c := range cases {
		rest, ok := TrimZone(c.name, c.zone)
		if rest != c.rest || ok != c.ok {
			t.Errorf("TrimZone(%q, %q) = %q %v", c.name, c.zone, rest, ok)
		}
	}
}

func FuzzReverseAddr(f *testing.F) {
	for _, s := range []string{"1.0.3.10.in-addr.arpa.", "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.", "x.in-addr.arpa."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ReverseAddr(s)
		if !ok {
			return
		}
		if back, ok2 := ReverseAddr(ReverseName(a)); !ok2 || back != a {
			t.Fatalf("%q -> %v does not round-trip", s, a)
		}
	})
}

func FuzzDashedAddr(f *testing.F) {
	for _, s := range []string{"10-0-0-1", "fd00--1", "1-2-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := DashedAddr(s)
		if !ok {
			return
		}
		if back, ok2 := DashedAddr(Dashed(a)); !ok2 || back != a {
			t.Fatalf("%q -> %v does not round-trip", s, a)
		}
	})
}

func TestDashedIsLabel(t *testing.T) {
	for _, s := range []string{"10.0.0.1", "0.0.0.0", "fd00::1", "::1", "fd00::", "2001:db8:0:1:1:1:1:1", "::ffff:10.0.0.1"} {
		a := netip.MustParseAddr(s)
		if got, want := DashedIsLabel(a), IsLabel(Dashed(a)); got != want {
			t.Errorf("DashedIsLabel(%s) = %v, want %v (%q)", s, got, want, Dashed(a))
		}
	}
}

func TestDashedLen(t *testing.T) {
	for _, s := range []string{"10.0.0.1", "255.255.255.255", "fd00::1", "::1", "2001:db8:0:1:1:1:1:1", "::ffff:10.0.0.1"} {
		a := netip.MustParseAddr(s)
		if got, want := DashedLen(a), len(Dashed(a)); got != want {
			t.Errorf("DashedLen(%s) = %d, want %d", s, got, want)
		}
	}
}

// TestCouldBe6: DashedAddr's quick refusal turns down no label that a
// parse would accept: it answers as a parse of every label does, on
// labels made of the characters that matter.
func TestCouldBe6(t *testing.T) {
	parsed := func(label string) (netip.Addr, bool) {
		if strings.Count(label, "-") == 3 {
			if a, ok := dashed4(label); ok {
				return a, true
			}
		}
		if len(label) > 39 || !strings.Contains(label, "-") {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ":"))
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return netip.Addr{}, false
		}
		return a, true
	}
	const chars = "0123456789abcdefABCDEF-----.%sx"
	r := rand.New(rand.NewPCG(1, 2))
	labels := []string{"fd00--1", "1-2-3-4-5-6-7-8", "1-2-3-4-5-6-1.2.3.4", "--1.2.3.4", "--ffff-1.2.3.4", "fe80--1%x", "db-0", "web-0", "a-b-c-d-e-f-0-1"}
	for range 200000 {
		b := make([]byte, 1+r.IntN(39))
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		labels = append(labels, string(b))
	}
	accepted := 0
	for _, label := range labels {
		a, ok := DashedAddr(label)
		if b, want := parsed(label); ok != want || a != b {
			t.Fatalf("DashedAddr(%q) = %v %v, a parse says %v %v", label, a, ok, b, want)
		}
		if ok {
			accepted++
		}
	}
	if accepted < 100 {
		t.Fatalf("only %d of %d labels are addresses: the test shows little", accepted, len(labels))
	}
}
