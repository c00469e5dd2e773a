package replies

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestCounters counts a reply of each outcome and checks the child of
// the result it is.
func TestCounters(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t"}, []string{"result"})
	c := New(vec)
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
