package answer

import (
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestRotate(t *testing.T) {
	a, _ := AddrRecords("x.", []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")}, 5)
	var turn atomic.Uint32
	var firsts []string
	for range 3 {
		out := Rotate(a, &turn)
		if len(out) != 3 {
			t.Fatalf("Rotate returned %d records", len(out))
		}
		firsts = append(firsts, out[0].(*dns.A).A.String())
	}
	if got := strings.Join(firsts, " "); got != "10.0.0.2 10.0.0.3 10.0.0.1" {
		t.Errorf("first records %s", got)
	}
	if a[0].(*dns.A).A.String() != "10.0.0.1" {
		t.Error("Rotate changed its input")
	}
	if Rotate(nil, &turn) != nil || len(Rotate(a, nil)) != 3 {
		t.Error("Rotate of nothing, or without a turn")
	}
}

func TestReply(t *testing.T) {
	r := new(dns.Msg)
	r.SetQuestion("WeB.example.", dns.TypeA)
	a, _ := AddrRecords("web.example.", []netip.Addr{netip.MustParseAddr("10.0.0.1")}, 5)
	soa := &dns.SOA{Hdr: Hdr("example.", dns.TypeSOA, 5), Ns: "ns.example.", Mbox: "h.example."}

	m := Reply(r, "web.example.", dns.RcodeSuccess, a, nil, []dns.RR{soa})
	if !m.Authoritative || !m.Response || m.Id != r.Id || len(m.Ns) != 0 || m.Answer[0].Header().Name != "WeB.example." {
		t.Errorf("positive reply: %v", m)
	}
	if a[0].Header().Name != "web.example." {
		t.Error("Reply changed a shared record")
	}
	if m := Reply(r, "web.example.", dns.RcodeNameError, nil, nil, []dns.RR{soa}); len(m.Ns) != 1 || Result(m.Rcode, len(m.Answer)) != "nxdomain" {
		t.Errorf("NXDOMAIN reply: %v", m)
	}
	if m := Reply(r, "web.example.", dns.RcodeSuccess, nil, nil, []dns.RR{soa}); len(m.Ns) != 1 || Result(m.Rcode, len(m.Answer)) != "nodata" {
		t.Errorf("NODATA reply: %v", m)
	}
}

func TestZones(t *testing.T) {
	z, err := Zones([]string{"ClusterSet.Local", "10.42.0.0/16"}, []string{"unused."})
	if err != nil || strings.Join(z, " ") != "clusterset.local. 42.10.in-addr.arpa." {
		t.Errorf("Zones = %v, %v", z, err)
	}
	if z, _ := Zones(nil, []string{"clusterset.local."}); strings.Join(z, " ") != "clusterset.local." {
		t.Errorf("default zones = %v", z)
	}
	if _, err := Zones([]string{"a..b"}, nil); err == nil {
		t.Error("a..b accepted as a zone")
	}
	if !IsReverse("42.10.in-addr.arpa.") || IsReverse("clusterset.local.") {
		t.Error("IsReverse")
	}
}

func TestSerials(t *testing.T) {
	now := NextSerial(0)
	if NextSerial(now) != now+1 {
		t.Error("NextSerial does not move past a serial from this second")
	}
	soa := &dns.SOA{Serial: 1}
	if c := WithSerial(soa, 7); c.Serial != 7 || soa.Serial != 1 {
		t.Error("WithSerial")
	}
}

func TestListenAddrs(t *testing.T) {
	if got := ListenAddrs([]string{"127.0.0.1", "::"}); len(got) != 1 || got[0].String() != "127.0.0.1" {
		t.Errorf("ListenAddrs = %v", got)
	}
	if got := ListenAddrs([]string{"::"}); len(got) == 0 {
		t.Error("ListenAddrs of a wildcard gave nothing")
	}
}

// TestCountersMatchResult counts a reply of each outcome and checks that
// the child of the label Result names was the one counted.
func TestCountersMatchResult(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t"}, []string{"result"})
	c := NewCounters(vec)
	for _, r := range []struct{ rcode, answers int }{
		{dns.RcodeSuccess, 1}, {dns.RcodeSuccess, 0}, {dns.RcodeNameError, 0}, {dns.RcodeServerFailure, 0},
	} {
		want := value(vec.WithLabelValues(Result(r.rcode, r.answers))) + 1
		c.Count(r.rcode, r.answers)
		if got := value(vec.WithLabelValues(Result(r.rcode, r.answers))); got != want {
			t.Errorf("Count(%d, %d): %s is %v, want %v", r.rcode, r.answers, Result(r.rcode, r.answers), got, want)
		}
	}
}

func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
