// Package replies counts a plugin's replies by result, the one label of
// its coredns_<plugin>_requests_total.
package replies

import (
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Counters are the children of a plugin's requests counter by result,
// looked up once: WithLabelValues hashes and validates its label on every
// call, a sixth of a cached answer's time.
type Counters struct {
	success, nodata, nxdomain, failed prometheus.Counter
	// The outcomes that are not a reply of ours: passed to the next
	// plugin, refused (no next plugin for a name outside our zones), or
	// SERVFAIL before the cache has synced.
	Fallthrough, Refused, NotSynced prometheus.Counter
}

// New takes vec's children, vec having the one label "result".
func New(vec *prometheus.CounterVec) *Counters {
	return &Counters{success: vec.WithLabelValues("success"), nodata: vec.WithLabelValues("nodata"),
		nxdomain: vec.WithLabelValues("nxdomain"), failed: vec.WithLabelValues("error"),
		Fallthrough: vec.WithLabelValues("fallthrough"), Refused: vec.WithLabelValues("refused"),
		NotSynced: vec.WithLabelValues("not_synced")}
}

// Count counts one reply: success, nodata, nxdomain or error.
func (c *Counters) Count(rcode, answers int) {
	switch {
	case rcode == dns.RcodeNameError:
		c.nxdomain.Inc()
	case rcode != dns.RcodeSuccess:
		c.failed.Inc()
	case answers == 0:
		c.nodata.Inc()
	default:
		c.success.Inc()
	}
}
