package dnszone

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestAddrAnswer(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"10.2.0.5", "a.b. 5 IN A 10.2.0.5"},
		{"fd00::5", "a.b. 5 IN AAAA fd00::5"},
		{"::ffff:10.2.0.5", "a.b. 5 IN AAAA ::ffff:10.2.0.5"},
	} {
		rr := AddrAnswer("a.b.", netip.MustParseAddr(tc.ip), 5)
		if got := strings.ReplaceAll(rr[0].String(), "\t", " "); len(rr) != 1 || got != tc.want {
			t.Errorf("%s: %q, want %q", tc.ip, got, tc.want)
		}
		if want := NewAddrRecord("a.b.", netip.MustParseAddr(tc.ip), 5); !dns.IsDuplicate(rr[0], want) {
			t.Errorf("%s: %s, NewAddrRecord %s", tc.ip, rr[0], want)
		}
	}
}
