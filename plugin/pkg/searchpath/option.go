package searchpath

import (
	"fmt"
	"strconv"

	"github.com/miekg/dns"
)

// ParseCode reads an option code as written in a Corefile: decimal
// (65534) or hexadecimal with 0x (0xfffe), within MinCode–MaxCode.
func ParseCode(s string) (uint16, error) {
	v, err := strconv.ParseUint(s, 0, 16)
	if err != nil || uint16(v) < MinCode || uint16(v) > MaxCode {
		return 0, fmt.Errorf("option code %q is not a number from %d to %d (the experimental range)", s, MinCode, MaxCode)
	}
	return uint16(v), nil
}

// Find returns the value of the option with code in m's OPT record and
// whether m carries it; a message with the option more than once is
// malformed (ErrDuplicate).
func Find(m *dns.Msg, code uint16) ([]byte, bool, error) {
	opt := m.IsEdns0()
	if opt == nil {
		return nil, false, nil
	}
	var value []byte
	found := false
	for _, o := range opt.Option {
		if o.Option() != code {
			continue
		}
		if found {
			return nil, true, ErrDuplicate
		}
		found = true
		if l, ok := o.(*dns.EDNS0_LOCAL); ok {
			value = l.Data
		}
	}
	return value, found, nil
}

// Remove deletes every option with code from m's OPT record, keeping the
// record itself (the query still speaks EDNS0).
func Remove(m *dns.Msg, code uint16) {
	opt := m.IsEdns0()
	if opt == nil {
		return
	}
	kept := opt.Option[:0]
	for _, o := range opt.Option {
		if o.Option() != code {
			kept = append(kept, o)
		}
	}
	clear(opt.Option[len(kept):])
	opt.Option = kept
}

// Attach sets the option on m with value, replacing any there, and adds an
// OPT record advertising udpSize when m has none.
func Attach(m *dns.Msg, code uint16, value []byte, udpSize uint16) {
	opt := m.IsEdns0()
	if opt == nil {
		m.SetEdns0(udpSize, false)
		opt = m.IsEdns0()
	}
	Remove(m, code)
	opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: code, Data: value})
}

// CNAME is the alias both plugins put ahead of an answer found for a
// client under another name: q's name pointing at target, with the lowest
// TTL of res's answer (of its SOA for NODATA, 0 without either), so that no
// cache keeps the alias longer than the data behind it.
func CNAME(q dns.Question, target string, res *dns.Msg) *dns.CNAME {
	ttl, ok := uint32(0), false
	for _, rr := range res.Answer {
		if t := rr.Header().Ttl; !ok || t < ttl {
			ttl, ok = t, true
		}
	}
	if !ok {
		for _, rr := range res.Ns {
			if soa, isSOA := rr.(*dns.SOA); isSOA {
				ttl = min(soa.Hdr.Ttl, soa.Minttl)
			}
		}
	}
	return &dns.CNAME{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeCNAME, Class: q.Qclass, Ttl: ttl}, Target: target}
}

// WithoutOPT is rrs (an additional section) without its OPT record: a
// reply built for a client gets the client's OPT from the server, so that
// the SearchPaths option is never echoed.
func WithoutOPT(rrs []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if rr.Header().Rrtype != dns.TypeOPT {
			out = append(out, rr)
		}
	}
	return out
}
