package churn

import (
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// reply is a NOERROR answer of the given addresses.
func reply(addrs ...string) *dns.Msg {
	m := new(dns.Msg)
	for _, a := range addrs {
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.ParseIP(a)})
	}
	return m
}

func TestJudge(t *testing.T) {
	loaded := netip.MustParseAddr("10.64.0.0") // the fixture's first endpoint
	s := &Service{addrs: []uint32{dnsload.AddrNum(loaded), dnsload.AddrNum(loaded) + 1}}
	s.states = map[uint64]int{dnsload.SetHash(s.addrs): 0}
	s.addrs[0] = dnsload.AddrNum(churnBase)
	s.states[dnsload.SetHash(s.addrs)] = 1
	s.finalSeq = 1
	cases := []struct {
		name     string
		msg      *dns.Msg
		settling bool
		want     verdict
	}{
		{"as loaded, any order", reply("10.64.0.1", "10.64.0.0"), false, matches},
		{"after the update", reply("10.64.0.1", "10.128.0.0"), false, matches},
		{"as loaded while settling", reply("10.64.0.0", "10.64.0.1"), true, behind},
		{"last state while settling", reply("10.128.0.0", "10.64.0.1"), true, matches},
		{"a mix never written", reply("10.64.0.0", "10.128.0.0"), false, wrong},
		{"one address missing", reply("10.64.0.1"), false, wrong},
		{"empty", reply(), false, wrong},
	}
	for _, c := range cases {
		if got, _ := s.judge(c.msg, c.settling); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	nx := reply()
	nx.Rcode = dns.RcodeNameError
	if got, _ := s.judge(nx, false); got != wrong {
		t.Errorf("NXDOMAIN: %v, want wrong", got)
	}
}
