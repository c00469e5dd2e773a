package kubeschema

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// reverseRanges is the reverse_cidrs option: the cluster's own address
// ranges, whose reverse names kubeschema answers with authority.
type reverseRanges struct {
	// auto adds the ranges of the ServiceCIDR objects.
	auto bool
	// fixed are the ranges given in the Corefile (pod ranges, say).
	fixed []netip.Prefix
}

// parseReverseCIDRs parses `reverse_cidrs [auto] [CIDR...]`; every range
// must meet one of zones' reverse zones, or the option would do nothing
// for it.
func parseReverseCIDRs(args []string, zones []string) (reverseRanges, error) {
	var r reverseRanges
	if len(args) == 0 {
		return r, fmt.Errorf("reverse_cidrs: want auto, CIDRs, or both")
	}
	for i, arg := range args {
		if arg == "auto" && i == 0 {
			r.auto = true
			continue
		}
		p, err := netip.ParsePrefix(arg)
		if err != nil {
			return r, fmt.Errorf("reverse_cidrs: %q is not a CIDR (or auto, first): %w", arg, err)
		}
		p = p.Masked()
		if !slices.ContainsFunc(zones, func(z string) bool { return dnsname.IsReverseZone(z) && meets(z, p) }) {
			return r, fmt.Errorf("reverse_cidrs: %s is outside every reverse zone kubeschema serves (%s): add its reverse zone to the stanza's zones", p, strings.Join(zones, " "))
		}
		r.fixed = append(r.fixed, p)
	}
	return r, nil
}

// meets tells whether reverse zone holds the reverse names of some
// addresses in p: the zone is p's own reverse name, an ancestor or a
// descendant of it.
func meets(zone string, p netip.Prefix) bool {
	// The reverse name of p's first address, cut to the labels p fixes.
	parts := strings.Split(strings.TrimSuffix(dnsname.ReverseName(p.Addr()), "."), ".")
	owner := strings.Join(parts[len(parts)-prefixLabels(p):], ".") + "."
	return dns.IsSubDomain(zone, owner) || dns.IsSubDomain(owner, zone)
}

// prefixLabels is how many labels of a reverse name p fixes, its zone's
// own ("in-addr" and "arpa", "ip6" and "arpa") included: whole octets
// (IPv4) or nibbles (IPv6).
func prefixLabels(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 2 + p.Bits()/8
	}
	return 2 + p.Bits()/4
}

// ranges are the owned ranges: the fixed ones and, with auto, those of
// the ServiceCIDR objects in c.
func (r reverseRanges) ranges(c cacheReader) []netip.Prefix {
	out := slices.Clone(r.fixed)
	if r.auto {
		for _, sc := range c.ServiceCIDRs() {
			out = append(out, sc.CIDRs...)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// publishRanges sets the owned ranges, logging them when they change.
func (k *Kubeschema) publishRanges(c cacheReader) {
	if !k.opts.reverse.auto && k.opts.reverse.fixed == nil {
		return
	}
	now := k.opts.reverse.ranges(c)
	if prev := k.OwnedRanges(); k.rangesSet && slices.Equal(prev, now) {
		return
	}
	k.rangesSet = true
	k.SetOwnedRanges(now)
	log.Infof("reverse_cidrs: authoritative for the reverse names of %v", now)
}
