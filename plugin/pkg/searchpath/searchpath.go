// Package searchpath is the one definition of the KEP-2009 SearchPaths EDNS0
// option and of the autopath search domain, shared by the gensearchpath
// (node side) and edns0autopath (cluster side) plugins.
//
// # The SearchPaths option
//
// The option is an EDNS0 option (RFC 6891) whose code is taken from the
// local/experimental range 65001–65534; DefaultCode is 65534 (0xfffe), the
// code of the KEP authors' proof of concept. Its value is the search domains
// to append to the query name, in the order they are to be tried, written
// as ASCII domain names without trailing dots and separated by commas:
//
//	value = path *( "," path )
//	path  = label *( "." label )
//	label = 1*63( ALPHA / DIGIT / "-" / "_" )
//
// In words:
//   - at least one path; no empty path, so no leading, trailing or doubled
//     comma; no whitespace anywhere (the KEP's prose separates paths with
//     ", ": the wire form does not);
//   - a label is 1 to 63 octets of ASCII letters, digits, hyphens and
//     underscores: no escapes, no other octets, no empty label, so neither
//     a leading nor a trailing dot and not the root;
//   - a path is at most MaxPathLen (253) octets, which is 255 octets in
//     wire form once the root label is added;
//   - the whole value is at most MaxValueLen (512) octets;
//   - a receiver sets a limit on the number of paths (edns0autopath's
//     max_search_paths, default DefaultMaxPaths) and rejects more.
//
// Letters are compared without regard to case and kept as sent. The same
// path may appear twice; it is tried twice. A message carries the option at
// most once.
//
// A receiver tries <qname>.<path> for each path in order; a joined name
// longer than 255 octets in wire form is an error of the query (Join).
//
// # The autopath search domain
//
// A pod that uses autopath has the one search domain
//
//	search.<namespace>.<cluster-suffix>.<autopath-suffix>
//
// for example search.default.cluster.local.ap.k8s.io, so that its resolver
// asks for <base>.search.<namespace>.<cluster-suffix>.<autopath-suffix>.
// Form parses such names; PathsV1 derives the search paths of schema v1 from
// the namespace: <namespace>.svc.<cluster-suffix>, svc.<cluster-suffix>,
// <cluster-suffix>, then any host-level search domains.
package searchpath

import (
	"errors"
	"fmt"
	"strings"
)

// Limits of the option.
const (
	// DefaultCode is the option code used unless configured otherwise.
	DefaultCode uint16 = 0xfffe
	// MinCode and MaxCode bound the configurable codes: the
	// local/experimental range of RFC 6891.
	MinCode uint16 = 65001
	MaxCode uint16 = 65534
	// MaxValueLen is the longest option value accepted, in octets.
	MaxValueLen = 512
	// MaxPathLen is the longest path in octets (255 in wire form).
	MaxPathLen = 253
	// MaxLabelLen is the longest label in octets.
	MaxLabelLen = 63
	// DefaultMaxPaths is the default limit on the number of paths.
	DefaultMaxPaths = 8
)

var (
	// ErrEmpty: the option has no paths at all.
	ErrEmpty = errors.New("searchpath: empty SearchPaths option")
	// ErrTooLong: the option value is over MaxValueLen octets.
	ErrTooLong = fmt.Errorf("searchpath: SearchPaths option over %d octets", MaxValueLen)
	// ErrTooManyPaths: more paths than the receiver's limit.
	ErrTooManyPaths = errors.New("searchpath: too many search paths")
	// ErrBadPath: a path breaks the grammar.
	ErrBadPath = errors.New("searchpath: invalid search path")
	// ErrNameTooLong: a query name joined with a path is over 255 octets.
	ErrNameTooLong = errors.New("searchpath: joined name over 255 octets")
	// ErrDuplicate: a message carries the option more than once.
	ErrDuplicate = errors.New("searchpath: SearchPaths option given more than once")
)

// Parse reads an option value into its paths, enforcing the whole grammar
// and at most maxPaths paths (no limit when maxPaths <= 0). The paths are
// new strings, as sent.
func Parse(value []byte, maxPaths int) ([]string, error) {
	if len(value) == 0 {
		return nil, ErrEmpty
	}
	if len(value) > MaxValueLen {
		return nil, ErrTooLong
	}
	n := 1 + countByte(value, ',')
	if maxPaths > 0 && n > maxPaths {
		return nil, fmt.Errorf("%w: %d, the limit is %d", ErrTooManyPaths, n, maxPaths)
	}
	paths := make([]string, 0, n)
	for i, start := 0, 0; i <= len(value); i++ {
		if i < len(value) && value[i] != ',' {
			continue
		}
		if err := checkPath(value[start:i]); err != nil {
			return nil, fmt.Errorf("path %d: %w", len(paths)+1, err)
		}
		paths = append(paths, string(value[start:i]))
		start = i + 1
	}
	return paths, nil
}

// Format writes paths as an option value, checking them against the same
// grammar as Parse (the value itself must fit MaxValueLen).
func Format(paths []string) ([]byte, error) {
	if len(paths) == 0 {
		return nil, ErrEmpty
	}
	size := len(paths) - 1
	for i, p := range paths {
		if err := checkPath([]byte(p)); err != nil {
			return nil, fmt.Errorf("path %d: %w", i+1, err)
		}
		size += len(p)
	}
	if size > MaxValueLen {
		return nil, ErrTooLong
	}
	return []byte(strings.Join(paths, ",")), nil
}

// CheckPath reports whether p is a path of the grammar.
func CheckPath(p string) error { return checkPath([]byte(p)) }

// checkPath is the path rule of the grammar.
func checkPath(p []byte) error {
	if len(p) == 0 {
		return fmt.Errorf("%w: empty", ErrBadPath)
	}
	if len(p) > MaxPathLen {
		return fmt.Errorf("%w: %d octets, the limit is %d", ErrBadPath, len(p), MaxPathLen)
	}
	label := 0
	for i, c := range p {
		switch {
		case c == '.':
			if label == 0 {
				return fmt.Errorf("%w: %q has an empty label", ErrBadPath, p)
			}
			label = 0
			continue
		case !isLabelByte(c):
			return fmt.Errorf("%w: %q has the octet %#02x at %d", ErrBadPath, p, c, i)
		}
		label++
		if label > MaxLabelLen {
			return fmt.Errorf("%w: %q has a label over %d octets", ErrBadPath, p, MaxLabelLen)
		}
	}
	if label == 0 {
		return fmt.Errorf("%w: %q ends with a dot", ErrBadPath, p)
	}
	return nil
}

func isLabelByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func countByte(b []byte, c byte) int {
	n := 0
	for _, x := range b {
		if x == c {
			n++
		}
	}
	return n
}

// Join appends path to the fully qualified name base ("web." and
// "default.svc.cluster.local" give "web.default.svc.cluster.local."; the
// root "." gives the path itself). It fails when the result is over 255
// octets in wire form. base must be a valid presentation-format name (as
// received in a question); path must satisfy the grammar.
func Join(base, path string) (string, error) {
	var name string
	if base == "." {
		name = path + "."
	} else {
		name = base + path + "."
	}
	if WireLen(name) > 255 {
		return "", fmt.Errorf("%w: %s", ErrNameTooLong, name)
	}
	return name, nil
}

// WireLen is the length in octets of the fully qualified presentation-format
// name s in wire form, counting \X and \DDD escapes as one octet each. The
// root is 1; for a name that is not fully qualified the missing root label
// is counted too.
func WireLen(s string) int {
	if s == "." || s == "" {
		return 1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
				i += 3
			} else {
				i++
			}
		}
		n++
	}
	// Each label's dot becomes its length octet; a name that does not end
	// in a dot still needs the length octet of its first label and the
	// root, a fully qualified one only the root.
	if s[len(s)-1] == '.' && !escapedAt(s, len(s)-1) {
		return n + 1
	}
	return n + 2
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// escapedAt reports whether s[i] is escaped by an odd run of backslashes.
func escapedAt(s string, i int) bool {
	j := i - 1
	for j >= 0 && s[j] == '\\' {
		j--
	}
	return (i-j)%2 == 0
}
