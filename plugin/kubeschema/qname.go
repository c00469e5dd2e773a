package kubeschema

import (
	"net/netip"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// nameKind is what a name in the cluster zone refers to.
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
	nameHost                      // <hostname>.<svc>.<ns>.svc.<zone>
	nameProto                     // _<proto>.<svc>.<ns>.svc.<zone>
	namePort                      // _<port>._<proto>.<svc>.<ns>.svc.<zone>
	namePodLabel                  // pod.<zone>
	namePodNS                     // <ns>.pod.<zone>
	namePod                       // <dashed-ip>.<ns>.pod.<zone>
)

// parsedName is a query name split by the schema. Its strings are slices of
// the lower-cased query name, so parsing allocates nothing.
type parsedName struct {
	kind      nameKind
	namespace string
	// key is "<svc>.<ns>", the service map key.
	key     string
	service string
	// host is the endpoint hostname (nameHost), proto "_tcp" (nameProto),
	// port "_http._tcp" (namePort).
	host, proto, port string
	podAddr           netip.Addr
}

// parseName splits rest, the lower-case part of the query name before the
// zone (no trailing dot; "" for the apex), by the Kubernetes DNS schema.
// Anything that is not a well-formed name of the schema is nameNone.
func parseName(rest string) parsedName {
	if rest == "" {
		return parsedName{kind: nameApex}
	}
	if strings.IndexByte(rest, '\\') >= 0 || len(rest) > 253 {
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
	case "pod":
		return parsePod(labels)
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
	p := parsedName{kind: nameService, namespace: ns, service: svc, key: labels[len(left2):]}
	if left2 != "" {
		p.key = labels[len(left2)+1:]
	}
	switch n := strings.Count(left2, "."); {
	case left2 == "":
		return p
	case n == 0 && isUnderscored(left2):
		p.kind, p.proto = nameProto, left2
	case n == 0 && dnsname.IsLabel(left2):
		p.kind, p.host = nameHost, left2
	case n == 1:
		port, proto := splitFromRight(left2)
		if !isUnderscored(port) || !isUnderscored(proto) {
			return parsedName{}
		}
		p.kind, p.port, p.proto = namePort, left2, proto
	default:
		return parsedName{}
	}
	return p
}

// parsePod handles the labels left of "pod".
func parsePod(labels string) parsedName {
	if labels == "" {
		return parsedName{kind: namePodLabel}
	}
	left, ns := splitFromRight(labels)
	if !dnsname.IsLabel(ns) {
		return parsedName{}
	}
	if left == "" {
		return parsedName{kind: namePodNS, namespace: ns}
	}
	if strings.IndexByte(left, '.') >= 0 {
		return parsedName{}
	}
	a, ok := dnsname.DashedAddr(left)
	if !ok {
		return parsedName{}
	}
	return parsedName{kind: namePod, namespace: ns, podAddr: a}
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
