package mesosstate

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// PID is a libprocess process ID, name@host:port: "master@10.0.0.1:5050",
// "slave(1)@10.0.0.2:5051", "scheduler-8e1a...@[2001:db8::1]:41234".
type PID struct {
	// Name is the process name before the @.
	Name string
	// Host is an IP literal (an IPv6 one without its brackets) or a host
	// name.
	Host string
	Port uint16
}

// ParsePID parses a libprocess PID. An IPv6 host is written in brackets.
// The parse is strict, so that String gives back the same text: the
// port is decimal, 1-65535, without leading zeros; a host name holds only
// letters, digits, '-', '_' and '.'.
func ParsePID(s string) (PID, error) {
	name, hostport, ok := strings.Cut(s, "@")
	if !ok || name == "" || strings.ContainsAny(name, "\x00 \t\r\n") {
		return PID{}, fmt.Errorf("%w: %q: want name@host:port", ErrBadPID, s)
	}
	colon := strings.LastIndexByte(hostport, ':')
	if colon < 0 {
		return PID{}, fmt.Errorf("%w: %q has no port", ErrBadPID, s)
	}
	host, portText := hostport[:colon], hostport[colon+1:]
	port, err := parsePort(portText)
	if err != nil {
		return PID{}, fmt.Errorf("%w: %q: %w", ErrBadPID, s, err)
	}
	if host, err = parsePIDHost(host); err != nil {
		return PID{}, fmt.Errorf("%w: %q: %w", ErrBadPID, s, err)
	}
	return PID{Name: name, Host: host, Port: port}, nil
}

// parsePIDHost checks a PID's host and strips an IPv6 literal's brackets.
func parsePIDHost(host string) (string, error) {
	if strings.HasPrefix(host, "[") {
		inner, ok := strings.CutSuffix(host[1:], "]")
		a, err := netip.ParseAddr(inner)
		if !ok || err != nil || !a.Is6() || a.Zone() != "" {
			return "", fmt.Errorf("host %s is not a bracketed IPv6 address", host)
		}
		return inner, nil
	}
	if host == "" {
		return "", fmt.Errorf("empty host")
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return "", fmt.Errorf("host %q has the character %q", host, c)
		}
	}
	return host, nil
}

// parsePort reads a decimal port, 1-65535, written without leading zeros.
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '0' || s[0] == '+' {
		return 0, fmt.Errorf("port %q is not a number in 1-65535", s)
	}
	return uint16(n), nil
}

// String formats the PID as libprocess writes it.
func (p PID) String() string {
	host := p.Host
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	return p.Name + "@" + host + ":" + strconv.Itoa(int(p.Port))
}

// Addr returns the host as an address when it is an IP literal. An
// IPv4-mapped IPv6 address comes back as IPv4.
func (p PID) Addr() (netip.Addr, bool) {
	a, err := netip.ParseAddr(p.Host)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
