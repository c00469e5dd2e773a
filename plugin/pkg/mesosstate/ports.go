package mesosstate

import (
	"fmt"
	"strings"
)

// MaxPortsPerTask caps what ParsePorts expands: a task holding a range like
// [1-65535] would otherwise cost 65,535 entries, and as many SRV records,
// at every poll. Real tasks hold a handful of ports.
const MaxPortsPerTask = 1024

// ParsePorts expands Mesos's port range text, as a task's "ports" resource
// has it: "[31000-31002, 31005-31005]" gives 31000, 31001, 31002, 31005.
// "[]" and "" give none. Ports come in the order of the text, not
// deduplicated (a master writes ranges sorted and merged). Only the first
// MaxPortsPerTask are returned; the rest of the text is still checked.
// An inverted range (31005-31000), a port outside 1-65535 or any other
// text is an error.
func ParsePorts(ranges string) ([]uint16, error) {
	s := strings.TrimSpace(ranges)
	if s == "" {
		return nil, nil
	}
	inner, open := strings.CutPrefix(s, "[")
	inner, closed := strings.CutSuffix(inner, "]")
	if !open || !closed {
		return nil, fmt.Errorf("%w: %q is not in brackets", ErrBadPorts, ranges)
	}
	if strings.TrimSpace(inner) == "" {
		return nil, nil
	}
	var ports []uint16
	for r := range strings.SplitSeq(inner, ",") {
		lo, hi, err := parseRange(strings.TrimSpace(r))
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrBadPorts, ranges, err)
		}
		for p := int(lo); p <= int(hi) && len(ports) < MaxPortsPerTask; p++ {
			ports = append(ports, uint16(p))
		}
	}
	return ports, nil
}

// parseRange reads "a-b" (or a lone "a", which some tools write).
func parseRange(r string) (lo, hi uint16, err error) {
	a, b, isRange := strings.Cut(r, "-")
	if lo, err = parseRangePort(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = parseRangePort(b); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("inverted range %s", r)
	}
	return lo, hi, nil
}

// parseRangePort reads one end of a range. Mesos writes ranges as
// unsigned 64-bit values; leading zeros are accepted, unlike in a PID.
func parseRangePort(s string) (uint16, error) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a port number", s)
		}
		if n = n*10 + int(s[i]-'0'); n > 65535 {
			return 0, fmt.Errorf("port %s is out of range", s)
		}
	}
	if s == "" || n == 0 {
		return 0, fmt.Errorf("port %q is out of range", s)
	}
	return uint16(n), nil
}
