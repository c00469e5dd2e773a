package tracked

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// answer is a NOERROR reply with the A records addrs.
func answer(name string, addrs []uint32) *dns.Msg {
	r := new(dns.Msg)
	r.SetQuestion(name, dns.TypeA)
	r.Response = true
	for _, a := range addrs {
		r.Answer = append(r.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.ParseIP(dnsload.NumAddr(a))})
	}
	return r
}

// TestJudge: a written state matches, a mix of two writes is torn, an
// older state after a newer one was shown is a regression, and after the
// settling only the final state matches; a deletion answers NXDOMAIN.
func TestJudge(t *testing.T) {
	tr := newService(0, true, 3)
	v0 := append([]uint32(nil), tr.Value()...)
	tr.addrs[0] = 1000
	tr.register()
	v1 := append([]uint32(nil), tr.Value()...)
	tr.deleted = true
	tr.register()
	tr.accepted(2)

	check := func(what string, r *dns.Msg, sent time.Time, settled bool, want verdict) {
		t.Helper()
		if got, why := tr.judge("s", r, sent, settled); got != want {
			t.Errorf("%s: verdict %d (%s), want %d", what, got, why, want)
		}
	}
	check("initial state", answer(tr.QName, v0), time.Now(), false, matches)
	check("a mix of two writes", answer(tr.QName, []uint32{v0[1], v1[0]}), time.Now(), false, torn)
	check("first write", answer(tr.QName, v1), time.Now(), false, matches)
	check("initial state again, asked after", answer(tr.QName, v0), time.Now(), false, regress)
	nx := answer(tr.QName, nil)
	nx.Rcode = dns.RcodeNameError
	check("deletion", nx, time.Now(), false, matches)
	check("write before the deletion", answer(tr.QName, v1), time.Now(), false, regress)
	tr.SettleHere()
	check("final after the settling", nx, time.Now(), true, matches)
	servfail := answer(tr.QName, nil)
	servfail.Rcode = dns.RcodeServerFailure
	check("SERVFAIL", servfail, time.Now(), false, torn)
}
