package mesos

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/soak/observe"
)

// reply is a NOERROR answer to name holding records, or NXDOMAIN when
// there are none.
func reply(name string, qtype uint16, records ...dns.RR) *dns.Msg {
	r := new(dns.Msg)
	r.SetQuestion(name, qtype)
	r.Response = true
	r.Answer = records
	if len(records) == 0 {
		r.Rcode = dns.RcodeNameError
	}
	return r
}

func aRecord(name, ip string) dns.RR {
	return &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.ParseIP(ip)}
}

// TestHistoryJudge: an answer must be one state's records, whole; a state
// replaced longer than the window before the query is too old; a state
// older than one shown before the query left is a regression; an empty
// answer where every state allowed has records is wrong.
func TestHistoryJudge(t *testing.T) {
	const name = "web.marathon.mesos."
	key := queryKey(name, dns.TypeA)
	h := newHistory(5 * time.Second)
	h.setPhase(observe.PhaseBefore)
	base := time.Now()
	set := func(n int, begin, visible time.Duration) {
		h.states[n].begin, h.states[n].visible = base.Add(begin), base.Add(visible)
	}
	h.begin(map[string]string{key: "10.0.0.1,10.0.0.2"})
	set(0, 0, 0)
	h.begin(map[string]string{key: "10.0.0.1,10.0.0.3"})
	set(1, 10*time.Second, 10*time.Second)
	h.begin(map[string]string{})
	set(2, 20*time.Second, 20*time.Second)
	c := h.byKey[key]
	at := func(d time.Duration) time.Time { return base.Add(d) }
	cases := []struct {
		what       string
		ips        []string
		sent, got  time.Duration
		wantWrong  bool
		wantReason string
	}{
		{"state 0", []string{"10.0.0.2", "10.0.0.1"}, time.Second, time.Second, false, ""},
		{"a mix of states 0 and 1", []string{"10.0.0.2", "10.0.0.3"}, 11 * time.Second, 11 * time.Second, true, "of no state"},
		{"state 1 before it began", []string{"10.0.0.1", "10.0.0.3"}, 9 * time.Second, 9 * time.Second, true, "of no state"},
		{"state 0 within the window after state 1", []string{"10.0.0.1", "10.0.0.2"}, 10500 * time.Millisecond, 10500 * time.Millisecond, false, ""},
		{"state 1", []string{"10.0.0.3", "10.0.0.1"}, 12 * time.Second, 12 * time.Second, false, ""},
		{"state 0 after state 1 was shown", []string{"10.0.0.1", "10.0.0.2"}, 12500 * time.Millisecond, 12500 * time.Millisecond, true, "shown after"},
		{"state 1 within the window after state 2", []string{"10.0.0.1", "10.0.0.3"}, 24 * time.Second, 24 * time.Second, false, ""},
		{"NXDOMAIN in state 2", nil, 24500 * time.Millisecond, 24500 * time.Millisecond, false, ""},
		{"state 1 too long after state 2", []string{"10.0.0.1", "10.0.0.3"}, 26 * time.Second, 26 * time.Second, true, "replaced more than"},
	}
	for _, tc := range cases {
		var rrs []dns.RR
		for _, ip := range tc.ips {
			rrs = append(rrs, aRecord(name, ip))
		}
		r := reply(name, dns.TypeA, rrs...)
		v, ok := answerCanonical(r)
		why := h.verdict(c, r, v, ok, at(tc.sent), at(tc.got))
		if (why != "") != tc.wantWrong || !strings.Contains(why, tc.wantReason) {
			t.Errorf("%s: verdict %q, want wrong %v (%q)", tc.what, why, tc.wantWrong, tc.wantReason)
		}
	}
	empty := newHistory(time.Second)
	empty.begin(map[string]string{key: "10.0.0.1"})
	empty.visible(0)
	r := reply(name, dns.TypeA)
	if why := empty.verdict(empty.byKey[key], r, "", true, time.Now(), time.Now()); !strings.Contains(why, "no records") || empty.total.Empty != 1 {
		t.Errorf("NXDOMAIN for a name with records: verdict %q, %d empty", why, empty.total.Empty)
	}
	servfail := reply(name, dns.TypeA, aRecord(name, "10.0.0.1"))
	servfail.Rcode = dns.RcodeServerFailure
	if why := empty.verdict(empty.byKey[key], servfail, "", false, time.Now(), time.Now()); why == "" || empty.total.ServFail != 1 {
		t.Errorf("SERVFAIL: verdict %q, %d SERVFAIL", why, empty.total.ServFail)
	}
}
