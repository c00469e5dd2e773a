// Package stanza holds what the schema plugins' setup shares in reading a
// Corefile stanza: its zones, and the addresses its server block listens
// on (which the server's own name answers with).
package stanza

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
)

// ParseZones normalises the zones of a stanza: lower case, fully
// qualified, CIDRs turned into reverse zones; defaults (the server block's
// keys, or a plugin's own default zone) when args is empty.
func ParseZones(args, defaults []string) ([]string, error) {
	for _, a := range args {
		if _, err := netip.ParsePrefix(a); err == nil {
			continue
		}
		if _, ok := dns.IsDomainName(a); !ok || strings.ContainsAny(a, "/:@ ") {
			return nil, fmt.Errorf("zone %q is not a domain name", a)
		}
	}
	zones := plugin.OriginsFromArgsOrServerBlock(args, defaults)
	for i, z := range zones {
		zones[i] = strings.ToLower(z)
	}
	return zones, nil
}

// ListenAddrs are the addresses a server's own name (ns.dns.<zone>)
// answers with: those the server block binds, or else this host's unicast
// addresses (loopback when it has none).
func ListenAddrs(hosts []string) []netip.Addr {
	var out []netip.Addr
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil && !a.IsUnspecified() {
			out = append(out, a.Unmap())
		}
	}
	if len(out) > 0 {
		return out
	}
	ifaddrs, _ := net.InterfaceAddrs()
	for _, ia := range ifaddrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().IsGlobalUnicast() {
			out = append(out, p.Addr().Unmap())
		}
	}
	if len(out) == 0 {
		out = append(out, netip.MustParseAddr("127.0.0.1"))
	}
	return out
}

// MaxTTL is the largest ttl the schema plugins accept, in seconds.
const MaxTTL = 3600

// ParseTTL parses the argument of `ttl SECONDS`: 0 to MaxTTL.
func ParseTTL(c *caddy.Controller, args []string) (uint32, error) {
	if len(args) != 1 {
		return 0, c.ArgErr()
	}
	ttl, err := strconv.Atoi(args[0])
	if err != nil || ttl < 0 || ttl > MaxTTL {
		return 0, c.Errf("ttl must be a whole number of seconds from 0 to %d, got %q", MaxTTL, args[0])
	}
	return uint32(ttl), nil
}

// ParseStartupTimeout parses the argument of `startup_timeout DURATION`.
func ParseStartupTimeout(c *caddy.Controller, args []string) (time.Duration, error) {
	if len(args) != 1 {
		return 0, c.ArgErr()
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d < 0 {
		return 0, c.Errf("startup_timeout: %q is not a duration", args[0])
	}
	return d, nil
}
