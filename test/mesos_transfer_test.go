package test

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestMesosTransfer transfers the zone through the stock transfer plugin
// over TCP: it starts and ends with the SOA, holds the apex NS and the
// nameserver's address, and every record examples/mesos/README.md lists,
// no other; and each name's records in it are those a query of that name
// and type answers.
func TestMesosTransfer(t *testing.T) {
	s, master := mesosServer{zones: "mesos", after: []string{"transfer mesos {", "    to *", "}"}}.start(t)
	soa := mesosSOA(mesosZone)
	apex := []string{rrLine(mesosZone, "NS", "ns1.mesos."), addrLine("ns1.mesos.", "127.0.0.1")}
	listed := exampleMesosRecords(t, masterPort(t, master))
	var rrs []dns.RR
	eventually(t, settleTimeout, "the zone transferred", func() bool {
		var err error
		rrs, err = axfr(s, mesosZone)
		return axfrProblem(rrs, err, soa, parseRRs(apex)) == ""
	})
	got := renderRRs(rrs[1 : len(rrs)-1])
	want := parseRRs(append(slices.Clone(apex), listed...))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("transfer, between the SOAs:\n%swant (examples/mesos/README.md and the apex):\n%s", indented(got), indented(want))
	}

	byQuestion := map[[2]string][]string{}
	for _, rr := range rrs[:len(rrs)-1] {
		h := rr.Header()
		k := [2]string{h.Name, dns.TypeToString[h.Rrtype]}
		byQuestion[k] = append(byQuestion[k], renderRRs([]dns.RR{rr})[0])
	}
	for k, inXfr := range byQuestion {
		r := s.exchange(t, "tcp", k[0], dns.StringToType[k[1]])
		answered := renderRRs(r.Answer)
		slices.Sort(answered)
		slices.Sort(inXfr)
		if !slices.Equal(answered, inXfr) {
			t.Errorf("%s %s: the query answers\n%sthe transfer holds\n%s", k[0], k[1], indented(answered), indented(inXfr))
		}
	}
}

// digRRs renders the records dig printed as dns.RR.String does, SOA
// serials zeroed.
func digRRs(t *testing.T, lines []string) []string {
	t.Helper()
	var rrs []dns.RR
	for _, l := range lines {
		rr, err := dns.NewRR(l)
		if err != nil {
			t.Fatalf("dig printed %q: %v", l, err)
		}
		rrs = append(rrs, rr)
	}
	out := renderRRs(rrs)
	slices.Sort(out)
	return out
}

// TestMesosDig asks the server with the real dig, over UDP and TCP: the
// status, the aa flag and each section, exactly.
func TestMesosDig(t *testing.T) {
	s, _ := mesosServer{zones: "mesos 172.16.0.0/12"}.start(t)
	soa := mesosSOA(mesosZone)
	rev := ptrName(t, "172.17.0.2")
	for _, c := range []struct {
		args                   []string
		tcp                    bool
		status                 string
		ans, authority, extras []string
	}{
		{args: []string{"leader.mesos", "A"}, status: "NOERROR", ans: []string{addrLine("leader.mesos.", mesosMasterIP)}},
		{args: []string{"_web._tcp.marathon.mesos", "SRV"}, status: "NOERROR", ans: []string{
			srvLine("_web._tcp.marathon.mesos.", 31301, "web-kbrou-s1.marathon.mesos."),
			srvLine("_web._tcp.marathon.mesos.", 31302, "web-kbrou-s1.marathon.mesos."),
			srvLine("_web._tcp.marathon.mesos.", 31401, "web-grm4c-s2.marathon.mesos."),
			srvLine("_web._tcp.marathon.mesos.", 31402, "web-grm4c-s2.marathon.mesos.")}, extras: []string{
			addrLine("web-kbrou-s1.marathon.mesos.", "172.17.0.2"),
			addrLine("web-grm4c-s2.marathon.mesos.", "172.17.0.3")}},
		{args: []string{"Worker-1.MyFramework.mesos", "A"}, tcp: true, status: "NOERROR",
			ans: []string{addrLine("Worker-1.MyFramework.mesos.", "192.168.50.7")}},
		{args: []string{"-x", "172.17.0.2"}, status: "NOERROR", ans: []string{rrLine(rev, "PTR", "web-kbrou-s1.marathon.mesos.")}},
		{args: []string{"marathon.slave.mesos", "A"}, status: "NOERROR", authority: []string{soa}},
		{args: []string{"cache.marathon.mesos", "A"}, tcp: true, status: "NXDOMAIN", authority: []string{soa}},
	} {
		addr := s.UDP
		if c.tcp {
			addr = s.TCP
		}
		r := digRun(t, addr, c.tcp, c.args...)
		sections := [][2][]string{
			{digRRs(t, r.answer), parseRRs(c.ans)},
			{digRRs(t, r.authority), parseRRs(c.authority)},
			{digRRs(t, r.additional), parseRRs(c.extras)},
		}
		ok := r.status == c.status && slices.Contains(r.flags, "aa")
		for _, sec := range sections {
			slices.Sort(sec[1])
			ok = ok && slices.Equal(sec[0], sec[1])
		}
		if !ok {
			t.Errorf("dig %s (tcp %v): want %s, aa, answer %v, authority %v, additional %v; dig printed:\n%s",
				strings.Join(c.args, " "), c.tcp, c.status, c.ans, c.authority, c.extras, r.out)
		}
	}
}
