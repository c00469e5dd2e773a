package dnszone

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// SRVPort is a named port: SRV records exist for _<Name>._<Proto>.
type SRVPort struct {
	Name, Proto string
	Number      uint16
}

// Group is what endpoints from one source share: the suffix of their host
// labels (".<clusterid>" for multicluster, "" otherwise) and the port
// numbers their SRV records carry, by index in the service's ports (nil:
// the ports' own numbers).
type Group struct {
	Suffix string
	Ports  []uint16
	// Zone is the endpoints' topology zone, for zonal names ("" for none
	// or unknown: never matched).
	Zone string
	// Preferred endpoints are the only ones the service name answers with
	// (its A, AAAA, ANY and SRV), when a service has any; host names and
	// PTR records are never filtered. Multicluster: the local cluster's,
	// for a PreferClose import.
	Preferred bool
}

// defaultGroups is the one group of a service whose endpoints all come
// from one source; shared, never changed.
var defaultGroups = []Group{{}}

// NewVirtual is a service answered with its own addresses.
func NewVirtual(key string, addrs []netip.Addr, ports []SRVPort) *Facts {
	eps := make([]EndpointFacts, len(addrs))
	for i, a := range addrs {
		eps[i] = NewEndpoint(a, "", 0, false)
	}
	s := &Facts{key: key, kind: Virtual, ports: namedPorts(ports), groups: defaultGroups}
	s.setEndpoints(eps)
	return s
}

// NewHeadless is a service answered with its endpoints; nil groups means
// one default group. The endpoints are sorted here.
func NewHeadless(key string, eps []EndpointFacts, ports []SRVPort, groups []Group) *Facts {
	if len(groups) == 0 {
		groups = defaultGroups
	}
	s := &Facts{key: key, kind: Headless, ports: namedPorts(ports), groups: groups}
	s.setEndpoints(eps)
	if idx := s.inGroups(func(g *Group) bool { return g.Preferred }); idx != nil {
		s.preferred = &idx
	}
	s.srvOrder = s.targetOrder(s.nameSelection())
	return s
}

// NewAlias is an ExternalName service: a CNAME to target.
func NewAlias(key, target string) *Facts {
	return &Facts{key: key, kind: Alias, rare: &rareFacts{target: strings.ToLower(target)}}
}

// targetOrder is the order of srvTargets' endpoints, one target after the
// other: the named endpoints of sel sorted by host name, stably. It is
// built with every update of a headless service, so by one sort rather
// than srvTargets' map and lists.
func (s *Facts) targetOrder(sel selection) []int {
	type named struct {
		prefix string
		i      int
	}
	all := make([]named, 0, sel.len())
	for k := range sel.len() {
		i := sel.at(k)
		if e := &s.endpoints[i]; e.named() {
			all = append(all, named{s.label(e) + s.groups[e.group].Suffix, i})
		}
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b named) int { return strings.Compare(a.prefix, b.prefix) })
	order := make([]int, len(all))
	for k, n := range all {
		order[k] = n.i
	}
	return order
}

// isNameSelection tells whether sel is the service name's selection, which
// srvOrder orders.
func (s *Facts) isNameSelection(sel selection) bool {
	if s.preferred == nil {
		return sel.idx == nil && sel.lo == 0 && sel.hi == len(s.endpoints)
	}
	p := *s.preferred
	return len(sel.idx) == len(p) && (len(p) == 0 || &sel.idx[0] == &p[0])
}

// sameTarget tells whether named endpoints i and j have one host name.
func (s *Facts) sameTarget(i, j int) bool {
	a, b := &s.endpoints[i], &s.endpoints[j]
	if s.groups[a.group].Suffix != s.groups[b.group].Suffix {
		return false
	}
	switch {
	case a.host != 0 && b.host != 0:
		return a.host == b.host // interned: one index per label
	case a.host == 0 && b.host == 0:
		return a.addr == b.addr
	}
	return s.label(a) == s.label(b) // a hostname spelled like an address
}

// label is e's host label without its group suffix.
func (s *Facts) label(e *endpoint) string {
	if e.host != 0 {
		return s.hosts[e.host-1]
	}
	return dnsname.Dashed(e.Addr())
}

// prefixLen is the length of what appendPrefix appends.
func (s *Facts) prefixLen(i int) int {
	e := &s.endpoints[i]
	n := len(s.groups[e.group].Suffix)
	if e.host != 0 {
		return n + len(s.hosts[e.host-1])
	}
	return n + dnsname.DashedLen(e.Addr())
}

// appendPrefix appends endpoint i's host label and group suffix to b.
func (s *Facts) appendPrefix(b []byte, i int) []byte {
	e := &s.endpoints[i]
	if e.host != 0 {
		b = append(b, s.hosts[e.host-1]...)
	} else {
		b = dnsname.AppendDashed(b, e.Addr())
	}
	return append(b, s.groups[e.group].Suffix...)
}

// inGroups are the indexes of the endpoints whose group satisfies match;
// nil when none does.
func (s *Facts) inGroups(match func(*Group) bool) []int {
	var out []int
	for i := range s.endpoints {
		if match(&s.groups[s.endpoints[i].group]) {
			out = append(out, i)
		}
	}
	return slices.Clip(out)
}

// nameSelection is the endpoints the service name answers with: the
// preferred ones if there are any, else all.
func (s *Facts) nameSelection() selection {
	if s.preferred != nil {
		return selection{idx: *s.preferred}
	}
	return all(s)
}

// inZone is the selection of endpoints in topology zone (lower case).
func (s *Facts) inZone(zone string) selection {
	idx := s.inGroups(func(g *Group) bool { return g.Zone != "" && strings.EqualFold(g.Zone, zone) })
	return selection{idx: idx}
}

// namedPorts keeps the ports that can have SRV records: a name, both
// labels valid, the first of any repeated name and protocol.
func namedPorts(ports []SRVPort) []SRVPort {
	var out []SRVPort // grown, not sized: unnamed ports (common) are dropped, and a sized slice would keep their room
	for _, p := range ports {
		if p.Name == "" || !dnsname.IsLabel(p.Name) || !dnsname.IsLabel(p.Proto) {
			continue
		}
		if slices.ContainsFunc(out, func(q SRVPort) bool { return q.Name == p.Name && q.Proto == p.Proto }) {
			continue
		}
		out = append(out, p)
	}
	return slices.Clip(out)
}

// Namespace is the service's namespace.
func (s *Facts) Namespace() string { _, ns, _ := strings.Cut(s.key, "."); return ns }

// Target is an alias's target ("" for other kinds).
func (s *Facts) Target() string {
	if s.kind != Alias {
		return ""
	}
	return s.rare.target
}

// HostName is the full host name of endpoint i under the service name
// svcName ("<svc>.<ns>.svc.<zone>"), or "" when it has none.
func (s *Facts) HostName(i int, svcName string) string {
	e := &s.endpoints[i]
	if !e.named() {
		return ""
	}
	return s.label(e) + s.groups[e.group].Suffix + "." + svcName
}

// target is one SRV target: a host name's prefix ("<label><suffix>"; ""
// when it is read from the endpoints) and its endpoints.
type target struct {
	prefix string
	sel    selection
}

// srvTargets lists the SRV targets of the selected endpoints of a
// headless service, in name order, each with its endpoints (IPv4 first,
// as stored).
func (s *Facts) srvTargets(sel selection) []target {
	byPrefix := map[string]int{}
	var out []target
	for k := range sel.len() {
		i := sel.at(k)
		e := &s.endpoints[i]
		if !e.named() {
			continue
		}
		p := s.label(e) + s.groups[e.group].Suffix
		j, ok := byPrefix[p]
		if !ok {
			j = len(out)
			byPrefix[p] = j
			out = append(out, target{prefix: p})
		}
		out[j].sel.idx = append(out[j].sel.idx, i)
	}
	slices.SortFunc(out, func(a, b target) int { return strings.Compare(a.prefix, b.prefix) })
	return out
}

// appendHostEndpoints appends the endpoints named prefix
// ("<label><suffix>"), by index, to out.
func (s *Facts) appendHostEndpoints(out []int, prefix string) []int {
	// A dashed label is looked up by address: most endpoints have no
	// hostname, and their labels are not stored.
	dashed, isDashed := netip.Addr{}, false
	for gi, g := range s.groups {
		label, ok := strings.CutSuffix(prefix, g.Suffix)
		if !ok || !dnsname.IsLabel(label) {
			continue
		}
		if a, ok := dnsname.DashedAddr(label); ok && dnsname.IsDashed(label, a) {
			dashed, isDashed = a, true
		}
		for i := range s.endpoints {
			e := &s.endpoints[i]
			if int(e.group) != gi || !e.named() {
				continue
			}
			if (e.host != 0 && s.hosts[e.host-1] == label) || (e.host == 0 && isDashed && e.Addr() == dashed) {
				out = append(out, i)
			}
		}
		isDashed = false
	}
	return out
}

// port is the index of the port "_<name>._<proto>", or -1.
func (s *Facts) port(key string) int {
	name, proto, _ := strings.Cut(key, ".")
	for i, p := range s.ports {
		if underscored(name, p.Name) && underscored(proto, p.Proto) {
			return i
		}
	}
	return -1
}

// hasProto tells whether a named port has the protocol "_<proto>".
func (s *Facts) hasProto(proto string) bool {
	for _, p := range s.ports {
		if underscored(proto, p.Proto) {
			return true
		}
	}
	return false
}

// portNumber is port i's number for endpoints of group g.
func (s *Facts) portNumber(i int, g uint8) uint16 {
	if ports := s.groups[g].Ports; i < len(ports) && ports[i] != 0 {
		return ports[i]
	}
	return s.ports[i].Number
}

// underscored tells whether s is "_" followed by label.
func underscored(s, label string) bool {
	return len(s) == len(label)+1 && s[0] == '_' && s[1:] == label
}
