package dnszone

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
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

// Key is "<svc>.<ns>".
func (s *Facts) Key() string { return s.key }

// Kind is how the service is answered.
func (s *Facts) Kind() Kind { return s.kind }

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

// NumEndpoints is the number of the service's addresses.
func (s *Facts) NumEndpoints() int { return len(s.endpoints) }

// EndpointAddr is the address of endpoint i (addresses are sorted).
func (s *Facts) EndpointAddr(i int) netip.Addr { return s.endpoints[i].Addr() }

// ServiceName is the name of svc under zone: "<svc>.<ns>.svc.<zone>", or a
// record set's own name.
func ServiceName(svc *Facts, zone string) string {
	if svc.kind == Records {
		return svc.key + "." + zone
	}
	return svc.key + ".svc." + zone
}
