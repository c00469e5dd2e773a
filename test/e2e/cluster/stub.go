package cluster

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// The upstream world the cluster sees: one zone, answered by a stub that
// the harness runs on stubIP (the node's resolv.conf names it).
const (
	ExternalName = "www.external.test."
	ExternalAddr = "198.18.0.200"
)

// Stub is the upstream DNS server: www.external.test has an A record,
// everything else is NXDOMAIN, and every question is counted.
type Stub struct {
	servers []*dns.Server
	mu      sync.Mutex
	asked   map[string]int // "name type" → count
}

// StartStub starts the stub on stubIP, over UDP and TCP.
func StartStub() (*Stub, error) {
	s := &Stub{asked: map[string]int{}}
	for _, netw := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: net.JoinHostPort(stubIP, "53"), Net: netw, Handler: s}
		started := make(chan error, 1)
		srv.NotifyStartedFunc = func() { started <- nil }
		go func() { started <- srv.ListenAndServe() }()
		select {
		case err := <-started:
			if err != nil {
				return nil, fmt.Errorf("stub DNS on %s/%s: %w", stubIP, netw, err)
			}
		case <-time.After(5 * time.Second):
			return nil, fmt.Errorf("stub DNS on %s/%s did not start", stubIP, netw)
		}
		s.servers = append(s.servers, srv)
	}
	return s, nil
}

// ServeDNS answers from the one zone.
func (s *Stub) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	s.mu.Lock()
	s.asked[name+" "+dns.TypeToString[q.Qtype]]++
	s.mu.Unlock()
	soa := &dns.SOA{Hdr: dns.RR_Header{Name: "external.test.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 30},
		Ns: "ns.external.test.", Mbox: "hostmaster.external.test.", Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 30}
	switch {
	case name == ExternalName && q.Qtype == dns.TypeA:
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP(ExternalAddr)}}
	case name == ExternalName:
		m.Ns = []dns.RR{soa}
	default:
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{soa}
	}
	_ = w.WriteMsg(m)
}

// Count returns how often name (any type) was asked.
func (s *Stub) Count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for k, v := range s.asked {
		if strings.HasPrefix(k, name+" ") {
			total += v
		}
	}
	return total
}

// Stop stops the stub.
func (s *Stub) Stop() {
	for _, srv := range s.servers {
		_ = srv.Shutdown()
	}
}
