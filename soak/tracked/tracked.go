// Package tracked holds the Kubernetes services the soak rewrites and
// checks: each one's states as written (Service), the fixture that loads
// them into the API server, the Writer that changes them through it, and
// the checker that asks the servers for them and judges every answer
// against the states written.
package tracked

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/soak/observe"
)

// Service is one service the soak rewrites and checks: a headless service
// by the A records of its name (its slice's addresses, or none while the
// slice is deleted), a ClusterIP service by the port of its SRV record
// (its Service's port). Every state written is registered before the write
// is sent, so no server can show a state the checker does not know.
type Service struct {
	NS, Name string
	Headless bool
	QName    string // the name checked
	QType    uint16

	// Owned by the one goroutine that writes the service.
	Svc     *corev1.Service // as the API server returned it (cluster IPs)
	addrs   []uint32        // the slice's addresses as last written
	hosts   []string        // StatefulSet-style hostnames, headless only
	port    int32           // the Service's port as last written
	seq     int             // writes sent
	deleted bool            // the slice is deleted (headless only)

	mu sync.Mutex
	// states maps the hash of an answer's value to the writes that give
	// it, ascending: a value can repeat (every deletion answers nothing).
	states map[uint64][]int
	lastOK int              // the last write the API server accepted
	final  int              // after a writing phase: what every answer must reach
	seen   map[string]*seen // by server: the newest state it has shown
}

// seen is the newest state one server has shown for a name, and when that
// answer arrived: a query sent after that must not show an older state (a
// deleted object's records coming back, a torn rollback).
type seen struct {
	seq int
	at  time.Time
}

func newService(i int, headless bool, endpoints int) *Service {
	t := &Service{NS: namespace(i), Headless: headless, port: basePort,
		states: map[uint64][]int{}, seen: map[string]*seen{}}
	if headless {
		t.Name = fmt.Sprintf("hl-%05d", i)
		t.QName, t.QType = t.Name+"."+t.NS+".svc.cluster.local.", dns.TypeA
		for j := range endpoints {
			t.addrs = append(t.addrs, dnsload.AddrNum(observe.Nth(endpointBase, uint32(i*endpoints+j))))
			t.hosts = append(t.hosts, fmt.Sprintf("%s-%d", t.Name, j))
		}
	} else {
		t.Name = fmt.Sprintf("svc-%05d", i)
		t.QName, t.QType = "_http._tcp."+t.Name+"."+t.NS+".svc.cluster.local.", dns.TypeSRV
		for j := range endpoints {
			t.addrs = append(t.addrs, dnsload.AddrNum(observe.Nth(endpointBase, uint32(i*endpoints+j))))
		}
	}
	t.states[dnsload.SetHash(t.Value())] = []int{0}
	return t
}

// Value is what the answer must hold in the state last written.
func (t *Service) Value() []uint32 {
	switch {
	case !t.Headless:
		return []uint32{uint32(t.port)}
	case t.deleted:
		return nil
	}
	return t.addrs
}

// SliceName is the one EndpointSlice of the service.
func (t *Service) SliceName() string { return t.Name + "-0" }

func (t *Service) slice() *discoveryv1.EndpointSlice {
	hosts := t.hosts
	if !t.Headless {
		hosts = nil
	}
	return endpointSlice(t.NS, t.SliceName(), t.Name, t.addrs, hosts)
}

// register records the state about to be written as write seq.
func (t *Service) register() int {
	t.seq++
	h := dnsload.SetHash(t.Value())
	t.mu.Lock()
	t.states[h] = append(t.states[h], t.seq)
	t.mu.Unlock()
	return t.seq
}

// accepted records that the API server accepted write seq.
func (t *Service) accepted(seq int) {
	t.mu.Lock()
	t.lastOK = max(t.lastOK, seq)
	t.mu.Unlock()
}

// SettleHere makes the last accepted write the one every answer must show.
func (t *Service) SettleHere() {
	t.mu.Lock()
	t.final = t.lastOK
	t.mu.Unlock()
}

// verdict is how an answer compares with the states written for its name.
type verdict int

const (
	matches verdict = iota // a state written, not older than one already seen
	torn                   // no state ever written (a mix of writes, a SERVFAIL)
	regress                // a state older than one this server showed before the query was sent
	behind                 // a state written, older than the one required
)

// judge compares server's answer r, to a query sent at sent, with the
// states of t; with settled, only the final state or a later one matches.
func (t *Service) judge(server string, r *dns.Msg, sent time.Time, settled bool) (verdict, string) {
	v, ok := AnswerValue(r)
	if !ok {
		return torn, dns.RcodeToString[r.Rcode]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cands := t.states[dnsload.SetHash(v)]
	if len(cands) == 0 {
		return torn, fmt.Sprintf("%d values, a state never written", len(v))
	}
	s := t.seen[server]
	if s == nil {
		s = &seen{}
		t.seen[server] = s
	}
	seq := cands[len(cands)-1]
	if sent.After(s.at) {
		// The server had already shown s.seq when this query left: the
		// answer must be that state or a later one.
		i, _ := slices.BinarySearch(cands, s.seq)
		if i == len(cands) {
			return regress, fmt.Sprintf("write %d shown after write %d", seq, s.seq)
		}
		seq = cands[i]
	}
	if seq > s.seq {
		s.seq, s.at = seq, time.Now()
	}
	if settled && cands[len(cands)-1] < t.final {
		return behind, ""
	}
	return matches, ""
}

// AnswerValue is what an answer holds: its A addresses or SRV ports
// (NXDOMAIN or NODATA hold nothing); false for any other rcode.
func AnswerValue(r *dns.Msg) ([]uint32, bool) {
	if r.Rcode == dns.RcodeNameError {
		return nil, true
	}
	if r.Rcode != dns.RcodeSuccess {
		return nil, false
	}
	var v []uint32
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			if ip, ok := netip.AddrFromSlice(rr.A.To4()); ok {
				v = append(v, dnsload.AddrNum(ip))
			}
		case *dns.SRV:
			v = append(v, uint32(rr.Port))
		}
	}
	return v, true
}
