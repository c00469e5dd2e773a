package answer

import (
	"testing"

	"github.com/miekg/dns"
)

func drain(ch <-chan []dns.RR) []string {
	var out []string
	for rrs := range ch {
		for _, rr := range rrs {
			out = append(out, rr.Header().Name+" "+dns.TypeToString[rr.Header().Rrtype])
		}
	}
	return out
}

func TestTransfer(t *testing.T) {
	soa := &dns.SOA{Hdr: Hdr("z.", dns.TypeSOA, 5), Serial: 100}
	ns := &dns.NS{Hdr: Hdr("z.", dns.TypeNS, 5), Ns: "ns.dns.z."}
	a := &dns.A{Hdr: Hdr("a.z.", dns.TypeA, 5)}
	body := func(send func([]dns.RR)) { send([]dns.RR{a}) }
	for _, tc := range []struct {
		serial uint32
		want   []string
	}{
		{0, []string{"z. SOA", "z. NS", "a.z. A", "z. SOA"}},  // AXFR
		{99, []string{"z. SOA", "z. NS", "a.z. A", "z. SOA"}}, // IXFR from an older serial: the whole zone
		{100, []string{"z. SOA"}},                             // IXFR at our serial: nothing changed
		{101, []string{"z. SOA"}},
	} {
		got := drain(Transfer(soa, tc.serial, [][]dns.RR{{ns}}, body))
		if len(got) != len(tc.want) {
			t.Errorf("serial %d: %q, want %q", tc.serial, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("serial %d: %q, want %q", tc.serial, got, tc.want)
				break
			}
		}
	}
	if ZoneIndex([]string{"a.", "b."}, "b.") != 1 || ZoneIndex([]string{"a."}, "c.") != -1 {
		t.Error("ZoneIndex")
	}
}
