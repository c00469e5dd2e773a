package dnszone

import (
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// NameKind is what a name in a forward zone refers to, by the grammar both
// schemas share.
type NameKind uint8

// The kinds of name.
const (
	NameNone      NameKind = iota // not a name of the schema: NXDOMAIN
	NameApex                      // <zone>
	NameVersion                   // dns-version.<zone>
	NameDNSLabel                  // dns.<zone>: empty non-terminal above ns.dns
	NameNS                        // ns.dns.<zone>: the nameserver itself
	NameSvcLabel                  // svc.<zone>
	NameNamespace                 // <ns>.svc.<zone>
	NameService                   // <svc>.<ns>.svc.<zone>
	NameProto                     // _<proto>.<svc>.<ns>.svc.<zone>
	NamePort                      // _<port>._<proto>.<svc>.<ns>.svc.<zone>
	// NameHost is <prefix>.<svc>.<ns>.svc.<zone> for any other prefix: an
	// endpoint's host name if one matches ("<label>" or, multicluster,
	// "<label>.<clusterid>").
	NameHost
	// NameOther is <labels>.<top>.<zone> for a top label the common
	// grammar does not know (kubeschema's "pod"): Top and Labels.
	NameOther
	// NameZonal is <topology-zone>.pin._zone.<svc>.<ns>.svc.<zone> or
	// <topology-zone>.prefer._zone...: TopologyZone (which may span
	// labels) and Prefer. Served with the zonal option only.
	NameZonal
)

// Name is a query name split by the grammar. Its strings are slices of the
// lower-cased query name, so parsing allocates nothing.
type Name struct {
	Kind      NameKind
	Namespace string
	Service   string
	// Key is "<svc>.<ns>", the service key.
	Key string
	// Host is the prefix of a NameHost; Proto "_tcp" (NameProto,
	// NamePort); Port "_http._tcp" (NamePort).
	Host, Proto, Port string
	// Top and Labels of a NameOther: "pod" and what precedes it.
	Top, Labels string
	// TopologyZone and Prefer of a NameZonal.
	TopologyZone string
	Prefer       bool
}

// ParseName splits rest, the lower-case part of the query name before the
// zone (no trailing dot; "" for the apex). Anything that is not a
// well-formed name of the grammar is NameNone.
func ParseName(rest string) Name { return parseName(rest) }

// parse sets n to what rest names (ParseName). The name is parsed in a
// frame of its own: lookupService's holds only n, not the result too.
//
//go:noinline
func (n *Name) parse(rest string) { *n = parseName(rest) }

func parseName(rest string) Name {
	if rest == "" {
		return Name{Kind: NameApex}
	}
	// Escapes and empty labels: no name of the schemas has them (and the
	// wire format cannot carry an empty label).
	if strings.IndexByte(rest, '\\') >= 0 || len(rest) > 253 || rest[0] == '.' || strings.Contains(rest, "..") {
		return Name{}
	}
	labels, top := dnsname.SplitLast(rest)
	switch top {
	case "dns-version":
		if labels == "" {
			return Name{Kind: NameVersion}
		}
		return Name{}
	case "dns":
		switch labels {
		case "":
			return Name{Kind: NameDNSLabel}
		case "ns":
			return Name{Kind: NameNS}
		}
		return Name{}
	case "svc":
		return parseService(labels)
	}
	return Name{Kind: NameOther, Top: top, Labels: labels}
}

// parseService handles the labels left of "svc".
func parseService(labels string) Name {
	if labels == "" {
		return Name{Kind: NameSvcLabel}
	}
	left, ns := dnsname.SplitLast(labels)
	if !dnsname.IsLabel(ns) {
		return Name{}
	}
	if left == "" {
		return Name{Kind: NameNamespace, Namespace: ns}
	}
	prefix, svc := dnsname.SplitLast(left)
	if !dnsname.IsLabel(svc) {
		return Name{}
	}
	n := Name{Kind: NameService, Namespace: ns, Service: svc, Key: labels}
	if prefix == "" {
		return n
	}
	n.Key = labels[len(prefix)+1:]
	first, last := dnsname.SplitLast(prefix)
	switch {
	case first == "" && isUnderscored(last):
		n.Kind, n.Proto = NameProto, last
	case isUnderscored(first) && isUnderscored(last):
		n.Kind, n.Port, n.Proto = NamePort, prefix, last
	case last == "_zone" && first != "":
		return zonal(n, first)
	default:
		n.Kind, n.Host = NameHost, prefix
	}
	return n
}

// zonal completes a zone-scoped name from what precedes "._zone":
// "<topology-zone>.pin" or "<topology-zone>.prefer". Any other directive
// is no name (NXDOMAIN, as in stock CoreDNS).
func zonal(n Name, directive string) Name {
	zone, d := dnsname.SplitLast(directive)
	if zone == "" {
		return Name{}
	}
	switch d {
	case "pin":
	case "prefer":
		n.Prefer = true
	default:
		return Name{}
	}
	n.Kind, n.TopologyZone = NameZonal, zone
	return n
}

// isUnderscored: "_" followed by a valid label (an SRV service or proto).
func isUnderscored(s string) bool { return len(s) > 1 && s[0] == '_' && dnsname.IsLabel(s[1:]) }
