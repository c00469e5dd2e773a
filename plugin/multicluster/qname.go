package multicluster

import (
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// nameKind is what a name in the clusterset zone refers to.
type nameKind uint8

const (
	nameNone      nameKind = iota // not a name of the schema: NXDOMAIN
	nameApex                      // <zone>
	nameVersion                   // dns-version.<zone>
	nameDNSLabel                  // dns.<zone>: empty non-terminal above ns.dns
	nameNS                        // ns.dns.<zone>: the nameserver itself
	nameSvcLabel                  // svc.<zone>
	nameNamespace                 // <ns>.svc.<zone>
	nameService                   // <svc>.<ns>.svc.<zone>
	nameProto                     // _<proto>.<svc>.<ns>.svc.<zone>
	namePort                      // _<port>._<proto>.<svc>.<ns>.svc.<zone>
	// nameCluster is <clusterid>.<svc>.<ns>.svc.<zone>: reserved by the
	// specification (sections 2.3.4 and 2.4.4), it MUST NOT exist.
	nameCluster
	nameHost // <hostname>.<clusterid>.<svc>.<ns>.svc.<zone>
)

// parsedName is a query name split by the schema. Its strings are slices of
// the lower-cased query name, so parsing allocates nothing.
type parsedName struct {
	kind      nameKind
	namespace string
	service   string
	// key is "<svc>.<ns>", the import map key.
	key string
	// host is "<hostname>.<clusterid>" (nameHost), proto "_tcp"
	// (nameProto), port "_http._tcp" (namePort).
	host, proto, port string
}

// parseName splits rest, the lower-case part of the query name before the
// zone (no trailing dot; "" for the apex), by the MCS DNS schema. Anything
// that is not a well-formed name of the schema is nameNone.
func parseName(rest string) parsedName {
	if rest == "" {
		return parsedName{kind: nameApex}
	}
	// Escapes and empty labels: no name of the schema has them (and the
	// wire format cannot carry an empty label).
	if strings.IndexByte(rest, '\\') >= 0 || len(rest) > 253 || rest[0] == '.' || strings.Contains(rest, "..") {
		return parsedName{}
	}
	labels, top := splitFromRight(rest)
	switch top {
	case "dns-version":
		if labels == "" {
			return parsedName{kind: nameVersion}
		}
	case "dns":
		switch labels {
		case "":
			return parsedName{kind: nameDNSLabel}
		case "ns":
			return parsedName{kind: nameNS}
		}
	case "svc":
		return parseService(labels)
	}
	return parsedName{}
}

// parseService handles the labels left of "svc".
func parseService(labels string) parsedName {
	if labels == "" {
		return parsedName{kind: nameSvcLabel}
	}
	left, ns := splitFromRight(labels)
	if !dnsname.IsLabel(ns) {
		return parsedName{}
	}
	if left == "" {
		return parsedName{kind: nameNamespace, namespace: ns}
	}
	left2, svc := splitFromRight(left)
	if !dnsname.IsLabel(svc) {
		return parsedName{}
	}
	p := parsedName{kind: nameService, namespace: ns, service: svc, key: labels}
	if left2 != "" {
		p.key = labels[len(left2)+1:]
	}
	return withPrefix(p, left2)
}

// withPrefix classifies the one or two labels left of "<svc>.<ns>.svc".
func withPrefix(p parsedName, prefix string) parsedName {
	if prefix == "" {
		return p
	}
	first, second := splitFromRight(prefix)
	switch {
	case strings.IndexByte(first, '.') >= 0:
		return parsedName{} // three labels or more: nothing lives there
	case first == "" && isUnderscored(second):
		p.kind, p.proto = nameProto, second
	case first == "" && dnsname.IsLabel(second):
		p.kind = nameCluster
	case isUnderscored(first) && isUnderscored(second):
		p.kind, p.port, p.proto = namePort, prefix, second
	case dnsname.IsLabel(first) && dnsname.IsLabel(second):
		p.kind, p.host = nameHost, prefix
	default:
		return parsedName{}
	}
	return p
}

// isUnderscored: "_" followed by a valid label (an SRV service or proto).
func isUnderscored(s string) bool { return len(s) > 1 && s[0] == '_' && dnsname.IsLabel(s[1:]) }

// splitFromRight returns the labels before the last one, and the last one.
func splitFromRight(s string) (rest, last string) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+1:]
}
