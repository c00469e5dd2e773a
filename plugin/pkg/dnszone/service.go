// Package dnszone is the zone-serving core that kubeschema and multicluster
// share: a compact store of the facts each service's answers are made of,
// published as immutable copy-on-write snapshots, and the query path that
// renders records from those facts when a query comes. Only the packages
// that serve a snapshot import it; how a change becomes a snapshot is
// package changes.
//
// Vocabulary: this package holds answer facts (Facts, EndpointFacts,
// SRVPort, Group), what DNS says of a service. The lean API objects they
// are built from are watchcache's (watchcache.Service, EndpointSlice,
// Port): what the API says. Only the schema plugins' builders read both.
//
// Why render at query time: precomputed dns.RR values cost several hundred
// bytes per endpoint (a record struct, an IP slice, an owner string, a PTR
// record, its reverse name, SRV records per port), more than the stock
// plugin keeps for the same cluster. Here an endpoint keeps 24 bytes in its
// service and 32 in the PTR index (figures_test.go measures both); the
// records of an answer are built in one allocation (block.go), faster
// than the copy a shared record would need for the question's case.
//
// Each plugin keeps only its own schema: what a service, pod or import
// means, and which names exist beyond the common grammar.
package dnszone

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// Kind is how a service's addresses are answered.
type Kind uint8

// The kinds of service.
const (
	// Virtual: the addresses are the service's own (a ClusterIP, a
	// ClusterSetIP): the SRV target is the service name itself, and PTR
	// records point to it.
	Virtual Kind = iota
	// Headless: the addresses are the ready endpoints, each with a host
	// name of its own that SRV and PTR records point to.
	Headless
	// Alias: an ExternalName service, a CNAME to Target.
	Alias
	// Records: a name with records of its own, nothing derived: its
	// addresses and explicit SRV records (NewRecords). The model of
	// schemas whose names are not services (Mesos), served with the
	// RecordNames grammar.
	Records
)

// Facts is what the answers of one service (or import) are made of. It is
// immutable once built; a change builds a new one.
type Facts struct {
	// key is "<svc>.<ns>", the part of its names before ".svc.<zone>".
	key  string
	kind Kind
	// endpoints sorted by address (IPv4 first): A answers are the first
	// n4, AAAA answers the rest.
	endpoints []endpoint
	n4        int
	// hosts are the endpoints' explicit host labels, each once.
	hosts []string
	// ports are the named ports, in the order SRV answers list them.
	ports []SRVPort
	// groups give endpoint host names their suffix and SRV targets their
	// port numbers (multicluster: one per cluster and slice); index 0 is
	// the default.
	groups []Group
	// preferred are the endpoints (by index) of Preferred groups, when
	// there are any: the service name answers with these alone. A pointer:
	// most services have none, and it costs them 8 bytes, not 24.
	preferred *[]int
	// srvOrder are the named endpoints of the name selection (index),
	// ordered by SRV target (host label and suffix), the endpoints of one
	// target adjacent: built with the facts, so an SRV answer of the
	// service name needs no map, no sort and no label strings. Headless
	// only.
	srvOrder []int
	// rare holds what only some kinds have: an alias's target, a record
	// set's SRV records. A pointer: services have none, and pay 8 bytes
	// for it.
	rare *rareFacts
	// turn rotates multi-record answers between responses.
	turn atomic.Uint32
}

// rareFacts are the facts of the kinds that are not services.
type rareFacts struct {
	// target of an Alias, fully qualified, lower case.
	target string
	// srvs of a Records name, sorted by target, then port.
	srvs []SRVRecord
}

// EndpointFacts describes one address of a service to NewHeadless.
type EndpointFacts struct {
	addr  netip.Addr
	host  string
	group uint8
	named bool
}

// endpoint is how a service keeps an address: 24 bytes, its host name
// derived from the address unless the API named it.
type endpoint struct {
	addr [16]byte
	// host is 1 + the index of its host label in Facts.hosts; 0 means
	// the address with dashes.
	host  uint32
	group uint8
	flags uint8
}

const (
	flagV4 uint8 = 1 << iota
	// flagUnnamed: the endpoint has no host name of its own (its
	// hostname is not a DNS label, or it is a virtual address).
	flagUnnamed
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

// NewEndpoint is an endpoint at addr named host ("" for its dashed
// address), in group; unnamed endpoints answer for the service name only.
func NewEndpoint(addr netip.Addr, host string, group uint8, named bool) EndpointFacts {
	return EndpointFacts{addr: addr.Unmap(), host: host, group: group, named: named}
}

// compact is e as a service keeps it, its host label interned in hosts.
func (e EndpointFacts) compact(hosts map[string]uint32, list *[]string) endpoint {
	c := endpoint{addr: e.addr.As16(), group: e.group}
	if e.addr.Is4() {
		c.flags |= flagV4
	}
	if !e.named {
		c.flags |= flagUnnamed
	}
	if e.host != "" {
		c.host = hostIndex(e.host, hosts, list)
	}
	return c
}

// hostIndex is the number of host in list (from 1), where it is added if
// absent; hosts indexes list when it is not nil.
func hostIndex(host string, hosts map[string]uint32, list *[]string) uint32 {
	if hosts != nil {
		if i, ok := hosts[host]; ok {
			return i
		}
	} else if i := slices.Index(*list, host); i >= 0 {
		return uint32(i + 1)
	}
	*list = append(*list, host)
	i := uint32(len(*list))
	if hosts != nil {
		hosts[host] = i
	}
	return i
}

// Addr is the endpoint's address.
func (e *endpoint) Addr() netip.Addr {
	a := netip.AddrFrom16(e.addr)
	if e.flags&flagV4 != 0 {
		return a.Unmap()
	}
	return a
}

// ip is the address as the bytes of an A or AAAA record, sharing the
// endpoint's memory: records are rendered per query and never modified.
func (e *endpoint) ip() []byte {
	if e.flags&flagV4 != 0 {
		return e.addr[12:16:16]
	}
	return e.addr[:]
}

func (e *endpoint) is4() bool   { return e.flags&flagV4 != 0 }
func (e *endpoint) named() bool { return e.flags&flagUnnamed == 0 }

// hasPTR tells whether endpoint i's address has a PTR record of the
// service: every address of a virtual service, the named endpoints of a
// headless one.
func (s *Facts) hasPTR(i int) bool { return s.kind == Virtual || s.endpoints[i].named() }

// firstAt is the index of the first endpoint at addr, or where it would
// be: IPv4 endpoints come first, each part sorted by address.
func (s *Facts) firstAt(addr [16]byte) int {
	lo, hi := 0, s.n4
	if !isV4Mapped(addr) {
		lo, hi = s.n4, len(s.endpoints)
	}
	i, _ := slices.BinarySearchFunc(s.endpoints[lo:hi], addr, func(e endpoint, t [16]byte) int { return bytes.Compare(e.addr[:], t[:]) })
	return lo + i
}

func isV4Mapped(a [16]byte) bool {
	return a[10] == 0xff && a[11] == 0xff && a[0]|a[1]|a[2]|a[3]|a[4]|a[5]|a[6]|a[7]|a[8]|a[9] == 0
}

// label is e's host label without its group suffix.
func (s *Facts) label(e *endpoint) string {
	if e.host != 0 {
		return s.hosts[e.host-1]
	}
	return dnsname.Dashed(e.Addr())
}

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

// NewAlias is an ExternalName service: a CNAME to target.
func NewAlias(key, target string) *Facts {
	return &Facts{key: key, kind: Alias, rare: &rareFacts{target: strings.ToLower(target)}}
}

func (s *Facts) setEndpoints(eps []EndpointFacts) {
	slices.SortStableFunc(eps, func(a, b EndpointFacts) int { return a.addr.Compare(b.addr) })
	s.endpoints = make([]endpoint, len(eps))
	named := 0
	for _, e := range eps {
		if e.host != "" {
			named++
		}
	}
	if named > 0 {
		s.hosts = make([]string, 0, named)
	}
	var hosts map[string]uint32
	if named > hostScan {
		hosts = make(map[string]uint32, named)
	}
	for i, e := range eps {
		s.endpoints[i] = e.compact(hosts, &s.hosts)
		if e.addr.Is4() {
			s.n4++
		}
	}
}

// hostScan is the number of host names up to which a service's repeated
// names are found by a scan of its list rather than a map: an update of a
// small service then allocates no map.
const hostScan = 32

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

// Key is "<svc>.<ns>".
func (s *Facts) Key() string { return s.key }

// Namespace is the service's namespace.
func (s *Facts) Namespace() string { _, ns, _ := strings.Cut(s.key, "."); return ns }

// Target is an alias's target ("" for other kinds).
func (s *Facts) Target() string {
	if s.kind != Alias {
		return ""
	}
	return s.rare.target
}

// eachParent calls fn with each name above the facts' own that exists
// because of it, an empty non-terminal while any facts are under it: a
// service's namespace (<ns>.svc.<zone>), each ancestor of a record set's
// name below the zone ("marathon.slave" and "slave" for
// "search.marathon.slave").
func (s *Facts) eachParent(fn func(string)) {
	if s.kind != Records {
		fn(s.Namespace())
		return
	}
	for rest := s.key; ; {
		_, parent, ok := strings.Cut(rest, ".")
		if !ok {
			return
		}
		fn(parent)
		rest = parent
	}
}

// Kind is how the service is answered.
func (s *Facts) Kind() Kind { return s.kind }

// NumEndpoints is the number of the service's addresses.
func (s *Facts) NumEndpoints() int { return len(s.endpoints) }

// EndpointAddr is the address of endpoint i (addresses are sorted).
func (s *Facts) EndpointAddr(i int) netip.Addr { return s.endpoints[i].Addr() }

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

// weight is the SRV weight of each of n targets: the load spread evenly,
// as the stock plugin does.
func weight(n int) uint16 { return uint16(max(1, 100/max(1, n))) }

// underscored tells whether s is "_" followed by label.
func underscored(s, label string) bool {
	return len(s) == len(label)+1 && s[0] == '_' && s[1:] == label
}
