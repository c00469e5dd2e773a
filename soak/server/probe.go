package server

import (
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// Liveness is one probe: a query, where it goes and the check of its
// answer.
type Liveness struct {
	Addr  string
	Query *dns.Msg
	Check func(*dns.Msg) error
}

// Question is a query for name and qtype.
func Question(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

// WantA accepts a NOERROR answer whose A records are exactly ip (after any
// CNAME).
func WantA(ip string) func(*dns.Msg) error {
	return func(r *dns.Msg) error {
		if r.Rcode != dns.RcodeSuccess {
			return fmt.Errorf("%s, want NOERROR", dns.RcodeToString[r.Rcode])
		}
		var got []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				got = append(got, a.A.String())
			}
		}
		if len(got) != 1 || got[0] != ip {
			return fmt.Errorf("answer holds %v, want %s", got, ip)
		}
		return nil
	}
}

// Probe runs p over network; it may take three tries (a busy machine),
// and must then answer right.
func Probe(p Liveness, network string) error {
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	var err error
	for range 3 {
		var r *dns.Msg
		m := p.Query.Copy()
		m.Id = dns.Id()
		if r, _, err = c.Exchange(m, p.Addr); err == nil {
			if err = p.Check(r); err == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("%s %s over %s: %w", p.Query.Question[0].Name, dns.TypeToString[p.Query.Question[0].Qtype], network, err)
}

// SOASerial is the serial of the SOA record s answers for zone.
func (s *Server) SOASerial(zone string) (uint32, error) {
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(Question(zone, dns.TypeSOA), s.Addr())
	if err != nil {
		return 0, fmt.Errorf("SOA of %s: %w", s, err)
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, nil
		}
	}
	return 0, fmt.Errorf("SOA of %s: no SOA in the answer (%s)", s, dns.RcodeToString[r.Rcode])
}
