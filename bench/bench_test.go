package main

import (
	"net"
	"testing"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/test/dnsload"
)

// Every shape gets exactly its headless and ClusterIP counts, whatever the
// spread.
func TestShapeCounts(t *testing.T) {
	for scale, shapes := range shapesAt {
		for _, sh := range shapes {
			f := &fixture{shape: sh}
			headless := 0
			for i := range sh.services() {
				if f.isHeadless(i) {
					headless++
				}
			}
			if headless != sh.Headless {
				t.Errorf("%s %s: %d headless services, want %d", scale, sh.Name, headless, sh.Headless)
			}
			if sh.Endpoints > maxSliceEndpoints {
				t.Errorf("%s %s: %d endpoints do not fit one slice, which the churn rewrites", scale, sh.Name, sh.Endpoints)
			}
		}
	}
}

func TestPickShapes(t *testing.T) {
	got, mesos, err := pickShapes("default", "s4, M2, S2")
	if err != nil || len(got) != 2 || got[0].Name != "S2" || got[1].Name != "S4" {
		t.Errorf("pickShapes: %v, %v; want S2 and S4 in the scale's order", got, err)
	}
	if len(mesos) != 1 || mesos[0].Name != "M2" || !mesos[0].Worst {
		t.Errorf("pickShapes: Mesos shapes %v; want M2, the worst case", mesos)
	}
	if got, mesos, err := pickShapes("small", "M1"); err != nil || len(got) != 0 || len(mesos) != 1 || mesos[0].Gen.Tasks != 1000 {
		t.Errorf("pickShapes small M1: %v, %v, %v; want M1 alone at a tenth", got, mesos, err)
	}
	if _, _, err := pickShapes("default", "S5"); err == nil {
		t.Error("pickShapes S5: no error")
	}
}

// reply is a NOERROR answer of the given addresses.
func reply(addrs ...string) *dns.Msg {
	m := new(dns.Msg)
	for _, a := range addrs {
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.ParseIP(a)})
	}
	return m
}

func TestJudge(t *testing.T) {
	s := &churned{addrs: []uint32{dnsload.AddrNum(endpointBase), dnsload.AddrNum(endpointBase) + 1}}
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

func TestMemStat(t *testing.T) {
	prof := "heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 100\n# HeapInuse = 123456\n# Stack = 1 / 2\n"
	if got, err := memStat(prof, "HeapInuse"); err != nil || got != 123456 {
		t.Errorf("memStat: %d, %v; want 123456", got, err)
	}
	if _, err := memStat(prof, "HeapIdle"); err == nil {
		t.Error("memStat of a missing line: no error")
	}
}
