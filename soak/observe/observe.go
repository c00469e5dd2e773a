// Package observe holds what the soak's scenarios measure the same way for
// the Kubernetes and the Mesos plugins: the counts of a checker's
// verdicts, latency quantiles, readiness and a gauge sampled through a
// fault's phases, and the numbering of the addresses the scenarios write
// and read back.
package observe

import (
	"net/netip"
	"slices"
	"time"
)

// CheckersPerServer are a checker's goroutines per server, each with its
// own UDP socket.
const CheckersPerServer = 4

// Count is what a checker counted for one server.
type Count struct {
	Answers  int      // answers compared with the states written
	Torn     int      // answers that match no state written for the name
	Regress  int      // answers older than one the server had shown before
	Behind   int      // with settled names: answers older than the last write
	ServFail int      // SERVFAIL answers (counted in Torn too)
	Empty    int      `json:",omitempty"` // Mesos: no records where every state allowed has some (counted in Torn too)
	Errors   int      // queries without an answer (timeouts)
	Examples []string // the first wrong answers
}

// Wrong is the answers that were wrong in any way.
func (c Count) Wrong() int { return c.Torn + c.Regress + c.Behind }

// LatencyTimeout bounds one latency probe of the churn: a change not
// shown by then counts at this value.
const LatencyTimeout = 10 * time.Second

// Quantiles summarise durations in milliseconds.
type Quantiles struct {
	N             int
	P50, P99, Max float64
	TimedOut      int // at LatencyTimeout
}

// Summarise sorts d and returns its quantiles.
func Summarise(d []time.Duration) Quantiles {
	if len(d) == 0 {
		return Quantiles{}
	}
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	q := Quantiles{N: len(d), P50: ms(d[len(d)/2]), P99: ms(d[len(d)*99/100]), Max: ms(d[len(d)-1])}
	for _, x := range d {
		if x >= LatencyTimeout {
			q.TimedOut++
		}
	}
	return q
}

// Nth is base + n. Each origin of an address the soak writes (endpoints
// as loaded, endpoints written later, a Mesos state's marker) has a range
// of its own, so that an answer's origin shows at a glance.
func Nth(base netip.Addr, n uint32) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
