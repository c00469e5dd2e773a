package k8sexternal

import (
	"net"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/miekg/dns"
)

// Records from the backend's msg.Services. A service's Host is an address
// (a record of the question's name) or a host name (the stock plugin's
// load balancer ingress by hostname: a CNAME, followed through the
// server's chain). Each address or host name is answered once, however
// many ports it came with.

// addrs answers an A or AAAA question.
func (e *External) addrs(q *query, svcs []msg.Service) reply {
	qtype, owner := q.state.QType(), q.state.QName()
	var res reply
	seen := map[string]bool{}
	for i := range svcs {
		s := &svcs[i]
		if seen[s.Host] {
			continue
		}
		seen[s.Host] = true
		what, ip := s.HostType()
		switch what {
		case qtype:
			res.answer = append(res.answer, e.addrRecord(owner, what, ip))
		case dns.TypeCNAME:
			res.answer = append(res.answer, &dns.CNAME{Hdr: e.hdr(owner, dns.TypeCNAME), Target: dns.Fqdn(s.Host)})
			follow, truncated := e.follow(q, s.Host, qtype)
			res.answer = append(res.answer, follow...)
			res.truncated = res.truncated || truncated
		}
	}
	return res
}

// follow resolves a host name through the server's chain; nothing when
// that fails (the client's resolver can follow the CNAME).
func (e *External) follow(q *query, host string, qtype uint16) ([]dns.RR, bool) {
	m, err := e.upstream.Lookup(q.ctx, q.state, dns.Fqdn(host), qtype)
	if err != nil || m == nil {
		return nil, false
	}
	return m.Answer, m.Truncated
}

// srvWeight is the weight of each SRV record: the backends give every
// service priority 0 and no weight, so CoreDNS's k8s_external shares 100
// among them evenly (at least 1 each), counting every service the
// backend returned, duplicates included. Kept so, for the same answers.
func srvWeight(n int) uint16 { return uint16(max(1, 100/max(1, n))) }

// srvs answers an SRV question: one record per target and port, targets
// named by the service's key (<svc>.<ns>.<zone> or
// <hostname>.<svc>.<ns>.<zone>), their addresses in the Additional
// section. A service without a port (-1) has no SRV record.
func (e *External) srvs(q *query, svcs []msg.Service) reply {
	type srvKey struct {
		target string
		port   uint16
	}
	owner, weight := q.state.QName(), srvWeight(len(svcs))
	var res reply
	seenSRV, seenAddr := map[srvKey]bool{}, map[[2]string]bool{}
	for i := range svcs {
		s := &svcs[i]
		if s.Port < 0 || s.Port > 0xffff {
			continue
		}
		what, ip := s.HostType()
		target := msg.Domain(s.Key)
		if what == dns.TypeCNAME {
			target = dns.Fqdn(s.Host)
		}
		if k := (srvKey{target, uint16(s.Port)}); !seenSRV[k] {
			seenSRV[k] = true
			res.answer = append(res.answer, &dns.SRV{Hdr: e.hdr(owner, dns.TypeSRV), Weight: weight, Port: uint16(s.Port), Target: target})
		}
		if seenAddr[[2]string{target, s.Host}] {
			continue
		}
		seenAddr[[2]string{target, s.Host}] = true
		res.extra = append(res.extra, e.targetAddrs(q, target, what, ip)...)
	}
	return res
}

// targetAddrs are the address records of an SRV target: its address, or
// for a host name what the chain resolves it to.
func (e *External) targetAddrs(q *query, target string, what uint16, ip net.IP) []dns.RR {
	if what != dns.TypeCNAME {
		return []dns.RR{e.addrRecord(target, what, ip)}
	}
	a, _ := e.follow(q, target, dns.TypeA)
	aaaa, _ := e.follow(q, target, dns.TypeAAAA)
	return append(a, aaaa...)
}

// ptrs answers a PTR question (the stock plugin serves the reverse names
// of external IPs when a reverse zone is one of the zones): each service's
// name, in the first zone.
func (e *External) ptrs(q *query, svcs []msg.Service) []dns.RR {
	var out []dns.RR
	seen := map[string]bool{}
	for _, s := range svcs {
		if seen[s.Host] {
			continue
		}
		seen[s.Host] = true
		out = append(out, &dns.PTR{Hdr: e.hdr(q.state.QName(), dns.TypePTR), Ptr: dnsutil.Join(s.Host, e.Zones[0])})
	}
	return out
}

func (e *External) hdr(owner string, rrtype uint16) dns.RR_Header {
	return dns.RR_Header{Name: owner, Rrtype: rrtype, Class: dns.ClassINET, Ttl: e.ttl}
}

// addrRecord is the A (what is dns.TypeA) or AAAA record of ip.
func (e *External) addrRecord(owner string, what uint16, ip net.IP) dns.RR {
	if what == dns.TypeA {
		return &dns.A{Hdr: e.hdr(owner, dns.TypeA), A: ip}
	}
	return &dns.AAAA{Hdr: e.hdr(owner, dns.TypeAAAA), AAAA: ip}
}
