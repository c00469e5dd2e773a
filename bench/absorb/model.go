package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// model is what every answer is judged against: for each headless service
// an update changes, every address set written for it (the initial one
// and one per update) in order.
type model struct {
	c       *cluster
	names   map[int]*name // by service number
	changed []*name       // in the order of their first update
	last    *name         // the service of the last update
}

// name is one changed headless service.
type name struct {
	service int
	fqdn    string
	states  map[uint64]int // hash of an address set → its place in the order (0: initial)
	final   []uint32       // the set of the last update
	updates int
	// lastEndpoint took lastAddr in the name's last update.
	lastEndpoint int
	lastAddr     uint32
}

func newModel(c *cluster) *model { return &model{c: c, names: map[int]*name{}} }

// record registers the set service i has after update u.
func (m *model) record(u update, addrs []uint32) {
	i := u.Service
	n, ok := m.names[i]
	if !ok {
		s := m.c.shape
		n = &name{service: i, fqdn: fmt.Sprintf("%s.%s.svc.cluster.local.", s.serviceName(i), s.namespace(i)), states: map[uint64]int{}}
		initial := make([]uint32, s.Endpoints)
		for j := range initial {
			initial[j] = dnsload.AddrNum(endpointBase) + uint32(i*s.Endpoints+j)
		}
		n.states[dnsload.SetHash(initial)] = 0
		m.names[i] = n
		m.changed = append(m.changed, n)
	}
	n.updates++
	n.states[dnsload.SetHash(addrs)] = n.updates
	n.final = slices.Clone(addrs)
	n.lastEndpoint, n.lastAddr = u.Endpoint, u.Addr
	m.last = n
}

// lastWritten is the endpoint n's last update changed and its address.
func (m *model) lastWritten(n *name) (int, uint32) { return n.lastEndpoint, n.lastAddr }

// verdict is how an A answer compares with a name's states.
type verdict struct {
	seq   int    // the state's place, -1 when none
	why   string // what is wrong, when seq is -1
	final bool   // the state of the last update
}

func (n *name) judge(r *dns.Msg) verdict {
	if r.Rcode != dns.RcodeSuccess {
		return verdict{seq: -1, why: dns.RcodeToString[r.Rcode]}
	}
	got := addrsOf(r)
	seq, ok := n.states[dnsload.SetHash(got)]
	if !ok {
		return verdict{seq: -1, why: fmt.Sprintf("%d addresses, a set never written", len(got))}
	}
	return verdict{seq: seq, final: seq == n.updates}
}

func addrsOf(r *dns.Msg) []uint32 {
	var got []uint32
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok && a.A.To4() != nil {
			got = append(got, binary.BigEndian.Uint32(a.A.To4()))
		}
	}
	return got
}

// hostnames are the names of service i's endpoints (StatefulSet-style).
func (m *model) hostname(i, j int) string { return fmt.Sprintf("%s-%d", m.c.shape.serviceName(i), j) }

// checkSRV tells what is wrong with the SRV answer of n's http port: one
// record per endpoint, each to its hostname under the service.
func (m *model) checkSRV(n *name, r *dns.Msg) string {
	want := map[string]bool{}
	for j := range m.c.shape.Endpoints {
		want[m.hostname(n.service, j)+"."+n.fqdn] = true
	}
	got := 0
	for _, rr := range r.Answer {
		srv, ok := rr.(*dns.SRV)
		if !ok {
			continue
		}
		if !want[strings.ToLower(srv.Target)] || srv.Port != 8080 {
			return fmt.Sprintf("SRV %s %d unexpected", srv.Target, srv.Port)
		}
		got++
	}
	if got != len(want) {
		return fmt.Sprintf("%d SRV records, want %d", got, len(want))
	}
	return ""
}

// checkPTR tells what is wrong with the PTR answer for endpoint j of n at
// its final address.
func (m *model) checkPTR(n *name, j int, r *dns.Msg) string {
	want := m.hostname(n.service, j) + "." + n.fqdn
	if len(r.Answer) != 1 {
		return fmt.Sprintf("%d PTR records, want 1 (%s)", len(r.Answer), want)
	}
	if p, ok := r.Answer[0].(*dns.PTR); !ok || !strings.EqualFold(p.Ptr, want) {
		return fmt.Sprintf("PTR %s, want %s", r.Answer[0], want)
	}
	return ""
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
