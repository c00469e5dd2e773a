// Package dnsname holds the small name grammars the plugins share: reverse
// (PTR) names and zones, dashed IP labels, label checks and splits. Parsers here never
// allocate on success, so the query path can use them freely.
package dnsname

import (
	"net/netip"
	"strings"
)

const (
	v4Suffix = ".in-addr.arpa."
	v6Suffix = ".ip6.arpa."
)

// ReverseAddr parses a complete reverse name (all four IPv4 octets under
// in-addr.arpa, or all 32 IPv6 nibbles under ip6.arpa) into an address.
// Case does not matter; the name must be fully qualified. Anything else,
// including a partial name (a reverse zone's interior), is not an address.
func ReverseAddr(name string) (netip.Addr, bool) {
	switch {
	case hasSuffixFold(name, v4Suffix):
		return reverse4(name[:len(name)-len(v4Suffix)])
	case hasSuffixFold(name, v6Suffix):
		return reverse6(name[:len(name)-len(v6Suffix)])
	}
	return netip.Addr{}, false
}

func reverse4(s string) (netip.Addr, bool) {
	var b [4]byte
	for i := 3; i >= 0; i-- {
		label := s
		if i > 0 {
			dot := strings.IndexByte(s, '.')
			if dot < 0 {
				return netip.Addr{}, false
			}
			label, s = s[:dot], s[dot+1:]
		}
		v, ok := octet(label)
		if !ok {
			return netip.Addr{}, false
		}
		b[i] = v
	}
	return netip.AddrFrom4(b), true
}

// octet parses a decimal 0-255 without leading zeros (a reverse label
// "010" is not the octet 10: it names nothing).
func octet(s string) (byte, bool) {
	if len(s) == 0 || len(s) > 3 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return byte(n), n <= 255
}

func reverse6(s string) (netip.Addr, bool) {
	// 32 nibbles separated by 31 dots.
	if len(s) != 63 {
		return netip.Addr{}, false
	}
	var b [16]byte
	for i := 0; i < 32; i++ {
		if i > 0 && s[2*i-1] != '.' {
			return netip.Addr{}, false
		}
		n, ok := nibble(s[2*i])
		if !ok {
			return netip.Addr{}, false
		}
		// The first label is the lowest nibble of the last byte.
		pos := 31 - i
		if pos%2 == 0 {
			b[pos/2] |= n << 4
		} else {
			b[pos/2] |= n
		}
	}
	return netip.AddrFrom16(b), true
}

func nibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// ReverseName is the PTR owner name of a, in lower case.
func ReverseName(a netip.Addr) string {
	var sb strings.Builder
	if a.Is4() {
		b := a.As4()
		for i := 3; i >= 0; i-- {
			sb.WriteString(itoa(b[i]))
			sb.WriteByte('.')
		}
		sb.WriteString(v4Suffix[1:])
		return sb.String()
	}
	const hex = "0123456789abcdef"
	b := a.As16()
	for i := 15; i >= 0; i-- {
		sb.WriteByte(hex[b[i]&0xf])
		sb.WriteByte('.')
		sb.WriteByte(hex[b[i]>>4])
		sb.WriteByte('.')
	}
	sb.WriteString(v6Suffix[1:])
	return sb.String()
}

func itoa(b byte) string {
	if b < 10 {
		return string('0' + b)
	}
	if b < 100 {
		return string([]byte{'0' + b/10, '0' + b%10})
	}
	return string([]byte{'0' + b/100, '0' + b/10%10, '0' + b%10})
}

// DashedAddr parses a pod-style label: "10-1-2-3" for 10.1.2.3, or an
// IPv6 address with its colons written as dashes ("fd00--1"). Octets
// must be 0-255 without leading zeros; IPv6 needs at least one "--" or
// seven dashes so that the two forms cannot be confused.
func DashedAddr(label string) (netip.Addr, bool) {
	if strings.Count(label, "-") == 3 {
		if a, ok := dashed4(label); ok {
			return a, true
		}
		// Else an IPv6 address of three colons, one of them in "::"
		// ("fd00--1-2"): four octets cannot have an empty one.
	}
	if len(label) > 39 || !strings.Contains(label, "-") || !couldBe6(label) {
		return netip.Addr{}, false
	}
	var buf [39]byte
	n := copy(buf[:], label)
	for i := 0; i < n; i++ {
		if buf[i] == '-' {
			buf[i] = ':'
		}
	}
	a, err := netip.ParseAddr(string(buf[:n]))
	if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a, true
}

// couldBe6 is false for a label that, its dashes read as colons, cannot
// be an IPv6 address without a zone: a character other than a hex digit,
// a dash or a dot, or neither "--" nor as many dashes as the address has
// groups but one. It turns down most hostnames ("web-0") before a parse,
// whose error is an allocation.
func couldBe6(label string) bool {
	dots := false
	for i := 0; i < len(label); i++ {
		switch c := label[i]; {
		case c == '.':
			dots = true
		case c != '-' && !('0' <= c && c <= '9') && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F'):
			return false
		}
	}
	n := strings.Count(label, "-")
	return strings.Contains(label, "--") || n == 7 || (dots && n == 6)
}

// dashed4 parses "10-1-2-3" (three dashes) as an IPv4 address.
func dashed4(label string) (netip.Addr, bool) {
	var b [4]byte
	s := label
	for i := 0; i < 4; i++ {
		part := s
		if i < 3 {
			dash := strings.IndexByte(s, '-')
			part, s = s[:dash], s[dash+1:]
		}
		v, ok := octet(part)
		if !ok {
			return netip.Addr{}, false
		}
		b[i] = v
	}
	return netip.AddrFrom4(b), true
}

// IsDashed tells whether label is Dashed(a), without making it.
func IsDashed(label string, a netip.Addr) bool {
	var buf [64]byte
	return string(AppendDashed(buf[:0], a)) == label
}

// Dashed is the pod-style label of a (the inverse of DashedAddr).
func Dashed(a netip.Addr) string {
	if a.Is4() {
		return strings.ReplaceAll(a.String(), ".", "-")
	}
	return strings.ReplaceAll(a.String(), ":", "-")
}

// DashedLen is the length of Dashed(a), without making it.
func DashedLen(a netip.Addr) int {
	var buf [64]byte
	return len(a.AppendTo(buf[:0]))
}

// AppendDashed appends Dashed(a) to b, without a string of its own.
func AppendDashed(b []byte, a netip.Addr) []byte {
	start := len(b)
	b = a.AppendTo(b)
	for i := start; i < len(b); i++ {
		if b[i] == '.' || b[i] == ':' {
			b[i] = '-'
		}
	}
	return b
}

// IsLabel reports whether s is a DNS label of the RFC 1123 kind that
// Kubernetes uses for names: 1-63 of [a-z0-9-], not starting or ending
// with a dash. s must already be lower case.
func IsLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// hasSuffixFold is strings.HasSuffix, ignoring ASCII case.
func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// TrimZone returns what comes before zone in name ("" for the apex), and
// whether name is in zone at all. Both must be fully qualified; zone must be
// lower case, name may be in any case.
func TrimZone(name, zone string) (string, bool) {
	if len(name) == len(zone) {
		return "", strings.EqualFold(name, zone)
	}
	if len(name) < len(zone)+1 || name[len(name)-len(zone)-1] != '.' || !hasSuffixFold(name, zone) {
		return "", false
	}
	return name[:len(name)-len(zone)-1], true
}

// DashedIsLabel tells whether Dashed(a) is a DNS label, without making
// it: every IPv4 address's is; an IPv6 address that begins or ends with
// "::" gives a label that begins or ends with a dash.
func DashedIsLabel(a netip.Addr) bool {
	if a.Is4() {
		return true
	}
	var buf [64]byte
	b := a.AppendTo(buf[:0])
	return len(b) > 0 && b[0] != ':' && b[len(b)-1] != ':' && a.Zone() == ""
}

// SplitLast returns the labels before the last one, and the last one.
func SplitLast(s string) (rest, last string) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+1:]
}

// IsReverseZone tells whether zone (fully qualified, lower case) is under
// in-addr.arpa or ip6.arpa.
func IsReverseZone(zone string) bool {
	return strings.HasSuffix(zone, "in-addr.arpa.") || strings.HasSuffix(zone, "ip6.arpa.")
}
