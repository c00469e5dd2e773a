package multicluster

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/answer"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

// snapshot is everything the query path reads. It is immutable once
// published; a change builds a new one (sharing the untouched parts) and
// swaps it in atomically, so queries never lock.
type snapshot struct {
	// zones are every zone served, in the order of Multicluster.Zones.
	zones []*zoneData
	// ptr is the one PTR record served for each address: an import's
	// address that this cluster does not already name (see ptrIndex).
	ptr map[netip.Addr]*dns.PTR
	// serial of the SOA: changes whenever the data does.
	serial uint32
}

// zoneData is one zone's records.
type zoneData struct {
	origin string // "clusterset.local."
	// reverse zones (in-addr.arpa, ip6.arpa) answer PTR from snapshot.ptr.
	reverse bool
	soa     *dns.SOA
	// negative is the Authority section of a negative answer: the SOA,
	// made once per snapshot so NXDOMAIN and NODATA allocate no slice.
	negative []dns.RR
	ns       []dns.RR
	// nsA and nsAAAA are the address records of ns.dns.<zone>.
	nsA, nsAAAA []dns.RR
	version     []dns.RR
	// imports by "<svc>.<ns>"; only imports that exist in DNS (a headless
	// import without ready endpoints does not).
	imports map[string]*importRecords
	// namespaces counts the imports of each namespace: <ns>.svc.<zone>
	// exists (as an empty non-terminal) while it is above zero.
	namespaces map[string]int
}

// importRecords are the precomputed answers of one import in one zone.
type importRecords struct {
	kind     watchcache.ServiceKind
	a, aaaa  []dns.RR
	srv      []dns.RR // SRV of the bare service name: every named port
	srvExtra []dns.RR
	ports    map[string]*portRecords // "_http._tcp"
	protos   map[string]bool         // "_tcp"
	// hosts of a headless import by "<hostname>.<clusterid>".
	hosts map[string]*hostRecords
	// turn rotates multi-record answers between responses.
	turn atomic.Uint32
}

type portRecords struct {
	srv, extra []dns.RR
}

type hostRecords struct {
	a, aaaa []dns.RR
}

// importInput is one import with what its records are made from, after
// the bad-input rules have been applied.
type importInput struct {
	imp *watchcache.ServiceImport
	// endpoints are the served endpoints of a headless import, merged over
	// the slices of every cluster; Cluster is the cluster ID in lower case.
	endpoints []watchcache.EndpointAddr
	// slicePorts are the ports of each slice by "<name>/<proto>": headless
	// clients connect to the endpoints' ports, which may differ by cluster.
	slicePorts map[string]map[string]int32
	// problems are the bad-input rules applied, one line each, for the log.
	problems []string
}

// newInput gathers an import's served endpoints from its slices: slices
// without a usable cluster ID are left out, an address claimed by two
// clusters is served once.
func newInput(imp *watchcache.ServiceImport, slices_ []*watchcache.EndpointSlice) importInput {
	in := importInput{imp: imp}
	in.checkPorts()
	if !imp.Headless {
		if len(imp.IPs) == 0 {
			in.problem("type ClusterSetIP without IPs: not served until it has some")
		}
		return in
	}
	usable := make([]*watchcache.EndpointSlice, 0, len(slices_))
	in.slicePorts = map[string]map[string]int32{}
	for _, s := range slices_ {
		if !in.usableSlice(s) {
			continue
		}
		if id := strings.ToLower(s.SourceCluster); id != s.SourceCluster {
			c := *s // cached objects are shared: change a copy
			c.SourceCluster = id
			s = &c
		}
		usable = append(usable, s)
		ports := map[string]int32{}
		for _, p := range s.Ports {
			ports[p.Name+"/"+protocol(p.Protocol)] = p.Port
		}
		in.slicePorts[s.Name()] = ports
	}
	in.endpoints = watchcache.ServedEndpoints(usable, false, in.conflicts())
	return in
}

// conflicts returns the duplicate callback of ServedEndpoints, which notes
// addresses claimed by two clusters: one line per pair of clusters (with
// the lowest such address as an example), not one per address.
func (in *importInput) conflicts() func(kept, dropped watchcache.EndpointAddr) {
	type pair struct{ kept, dropped string }
	type example struct {
		line int // index in problems
		addr netip.Addr
	}
	seen := map[pair]example{}
	return func(kept, dropped watchcache.EndpointAddr) {
		if kept.Cluster == dropped.Cluster {
			return // two slices of one cluster: a migration, not a problem
		}
		text := fmt.Sprintf("clusters %q and %q claim the same addresses (%s first): each is served once, from %q",
			kept.Cluster, dropped.Cluster, kept.Addr, kept.Cluster)
		p := pair{kept.Cluster, dropped.Cluster}
		ex, ok := seen[p]
		switch {
		case !ok:
			seen[p] = example{len(in.problems), kept.Addr}
			in.problem(text)
		case kept.Addr.Less(ex.addr):
			seen[p] = example{ex.line, kept.Addr}
			in.problems[ex.line] = text
		}
	}
}

// usableSlice applies the cluster ID rules to one slice.
func (in *importInput) usableSlice(s *watchcache.EndpointSlice) bool {
	switch id := strings.ToLower(s.SourceCluster); {
	case s.SourceCluster == "":
		in.problem(fmt.Sprintf("EndpointSlice %s has no %s label: skipped", s.Name(), watchcache.LabelSourceCluster))
		return false
	case !dnsname.IsLabel(id):
		in.problem(fmt.Sprintf("EndpointSlice %s: cluster ID %q is not a DNS label: skipped", s.Name(), s.SourceCluster))
		return false
	}
	return true
}

// checkPorts notes the ports that get no SRV record.
func (in *importInput) checkPorts() {
	for _, p := range in.imp.Ports {
		switch {
		case p.Name == "":
			in.problem(fmt.Sprintf("port %d/%s has no name: no SRV record", p.Port, protocol(p.Protocol)))
		case !dnsname.IsLabel(p.Name) || !dnsname.IsLabel(protocol(p.Protocol)):
			in.problem(fmt.Sprintf("port %q/%q is not a DNS label: no SRV record", p.Name, p.Protocol))
		}
	}
}

func (in *importInput) problem(s string) { in.problems = append(in.problems, s) }

// protocol is a port's protocol, TCP when the import leaves it out (the
// API's default for Service ports; the ServiceImport CRD has none).
func protocol(p string) string {
	if p == "" {
		return "tcp"
	}
	return p
}

// buildImport computes the records of in for zone origin with ttl; nil when
// the import has no name in DNS.
func buildImport(in importInput, origin string, ttl uint32) *importRecords {
	imp := in.imp
	name := imp.Name() + "." + imp.Namespace() + ".svc." + origin
	if !imp.Headless {
		if len(imp.IPs) == 0 {
			return nil
		}
		r := &importRecords{kind: watchcache.KindClusterSetIP}
		r.a, r.aaaa = answer.AddrRecords(name, imp.IPs, ttl)
		r.addPorts(imp.Ports, name, ttl, []target{{name: name, a: r.a, aaaa: r.aaaa}}, nil)
		return r
	}
	if len(in.endpoints) == 0 {
		return nil // no ready endpoint in any cluster: NXDOMAIN
	}
	r := &importRecords{kind: watchcache.KindMulticlusterHeadless}
	addrs := make([]netip.Addr, 0, len(in.endpoints))
	for _, ep := range in.endpoints {
		addrs = append(addrs, ep.Addr)
	}
	r.a, r.aaaa = answer.AddrRecords(name, addrs, ttl)
	r.addPorts(imp.Ports, name, ttl, r.addHosts(in.endpoints, name, ttl), in.slicePorts)
	return r
}

// target is one SRV target name, its address records and the slice its
// port numbers come from ("" for the import's own ports).
type target struct {
	name    string
	a, aaaa []dns.RR
	slice   string
}

// addHosts builds <hostname>.<clusterid>.<svc>... for each endpoint and
// returns the SRV targets, one per hostname and cluster, in name order.
func (r *importRecords) addHosts(eps []watchcache.EndpointAddr, svcName string, ttl uint32) []target {
	r.hosts = map[string]*hostRecords{}
	slice := map[string]string{}
	for _, ep := range eps {
		host := hostname(ep)
		if !dnsname.IsLabel(host) {
			log.Warningf("endpoint %s of %s: hostname %q is not a DNS label, it has no name of its own", ep.Addr, svcName, host)
			continue
		}
		key := host + "." + ep.Cluster
		h := r.hosts[key]
		if h == nil {
			h = &hostRecords{}
			r.hosts[key] = h
			slice[key] = ep.Slice
		}
		owner := key + "." + svcName
		if ep.Addr.Is4() {
			h.a = append(h.a, &dns.A{Hdr: answer.Hdr(owner, dns.TypeA, ttl), A: ep.Addr.AsSlice()})
		} else {
			h.aaaa = append(h.aaaa, &dns.AAAA{Hdr: answer.Hdr(owner, dns.TypeAAAA, ttl), AAAA: ep.Addr.AsSlice()})
		}
	}
	targets := make([]target, 0, len(r.hosts))
	for key, h := range r.hosts {
		targets = append(targets, target{name: key + "." + svcName, a: h.a, aaaa: h.aaaa, slice: slice[key]})
	}
	slices.SortFunc(targets, func(a, b target) int { return cmp.Compare(a.name, b.name) })
	return targets
}

// hostname is the specification's hostname of an endpoint: its hostname
// field, else a unique system-assigned identifier, its address with dashes
// (as the cluster-local schema names such endpoints).
func hostname(ep watchcache.EndpointAddr) string {
	if ep.Hostname != "" {
		return ep.Hostname
	}
	return dnsname.Dashed(ep.Addr)
}

// addPorts builds the SRV records: one per named port and target. Unnamed
// ports have no SRV record (the specification says so). A headless
// target's port number is that of its slice's port of the same name and
// protocol, when the slice has one.
func (r *importRecords) addPorts(ports []watchcache.Port, svcName string, ttl uint32, targets []target, slicePorts map[string]map[string]int32) {
	r.ports, r.protos = map[string]*portRecords{}, map[string]bool{}
	if len(targets) == 0 {
		return
	}
	weight := uint16(max(1, 100/len(targets)))
	for _, p := range ports {
		proto := protocol(p.Protocol)
		if p.Name == "" || !dnsname.IsLabel(p.Name) || !dnsname.IsLabel(proto) {
			continue
		}
		key := "_" + p.Name + "._" + proto
		if r.ports[key] != nil {
			continue // a repeated port: the first one stands
		}
		pr := &portRecords{}
		for _, t := range targets {
			number := p.Port
			if n, ok := slicePorts[t.slice][p.Name+"/"+proto]; ok {
				number = n
			}
			pr.srv = append(pr.srv, &dns.SRV{Hdr: answer.Hdr(key+"."+svcName, dns.TypeSRV, ttl), Weight: weight, Port: uint16(number), Target: t.name})
			pr.extra = append(append(pr.extra, t.a...), t.aaaa...)
		}
		r.ports[key] = pr
		r.protos["_"+proto] = true
		r.srv = append(r.srv, pr.srv...)
	}
	if len(r.srv) > 0 {
		for _, t := range targets {
			r.srvExtra = append(append(r.srvExtra, t.a...), t.aaaa...)
		}
	}
}

// ptrRecord is one candidate PTR record, with the import it came from.
type ptrRecord struct {
	imp string // "<ns>/<name>"
	rr  *dns.PTR
}

// ptrRecords are the PTR records an import would give: each clusterset IP
// to the service name, each named headless endpoint to its host name.
func ptrRecords(key string, r *importRecords, ttl uint32) map[netip.Addr]ptrRecord {
	out := map[netip.Addr]ptrRecord{}
	add := func(rrs []dns.RR) {
		for _, rr := range rrs {
			ip := answer.AddrOf(rr)
			out[ip] = ptrRecord{imp: key, rr: &dns.PTR{Hdr: answer.Hdr(dnsname.ReverseName(ip), dns.TypePTR, ttl), Ptr: rr.Header().Name}}
		}
	}
	if r.kind == watchcache.KindClusterSetIP {
		add(r.a)
		add(r.aaaa)
		return out
	}
	for _, h := range r.hosts {
		add(h.a)
		add(h.aaaa)
	}
	return out
}
