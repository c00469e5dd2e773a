package dnszone

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestParseZones(t *testing.T) {
	z, err := ParseZones([]string{"ClusterSet.Local", "10.42.0.0/16"}, []string{"unused."})
	if err != nil || strings.Join(z, " ") != "clusterset.local. 42.10.in-addr.arpa." {
		t.Errorf("ParseZones = %v, %v", z, err)
	}
	if z, _ := ParseZones(nil, []string{"clusterset.local."}); strings.Join(z, " ") != "clusterset.local." {
		t.Errorf("default zones = %v", z)
	}
	if _, err := ParseZones([]string{"a..b"}, nil); err == nil {
		t.Error("a..b accepted as a zone")
	}
	if !IsReverse("42.10.in-addr.arpa.") || IsReverse("clusterset.local.") {
		t.Error("IsReverse")
	}
}

func TestNextSerial(t *testing.T) {
	now := NextSerial(0)
	if NextSerial(now) != now+1 {
		t.Error("NextSerial does not move past a serial from this second")
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

// TestCounters counts a reply of each outcome and checks the child of
// the result it is.
func TestCounters(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t"}, []string{"result"})
	c := NewCounters(vec)
	for _, r := range []struct {
		rcode, answers int
		result         string
	}{
		{dns.RcodeSuccess, 1, "success"}, {dns.RcodeSuccess, 0, "nodata"}, {dns.RcodeNameError, 0, "nxdomain"}, {dns.RcodeServerFailure, 0, "error"},
	} {
		want := value(vec.WithLabelValues(r.result)) + 1
		c.Count(r.rcode, r.answers)
		if got := value(vec.WithLabelValues(r.result)); got != want {
			t.Errorf("Count(%d, %d): %s is %v, want %v", r.rcode, r.answers, r.result, got, want)
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
