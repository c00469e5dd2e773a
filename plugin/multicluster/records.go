package multicluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

// importInput is one import with what its records are made from, after
// the bad-input rules have been applied.
type importInput struct {
	imp *kubesource.ServiceImport
	// endpoints are the served endpoints of a headless import, merged over
	// the slices of every cluster; Cluster is the cluster ID in lower case.
	endpoints []kubesource.EndpointAddr
	// slicePorts are the ports of each slice by "<name>/<proto>": headless
	// clients connect to the endpoints' ports, which may differ by cluster.
	slicePorts map[string]map[string]int32
	// ips are the clusterset IPs served: those of the import's ipFamilies.
	ips []netip.Addr
	// local is the cluster whose endpoints the service name prefers
	// (PreferClose), "" for none.
	local string
	// problems are the bad-input rules applied, one line each, for the log.
	problems []string
}

// newInput gathers an import's served addresses: the clusterset IPs of its
// families, or the endpoints from its slices (slices without a usable
// cluster ID are left out, an address claimed by two clusters is served
// once, addresses of a family the import does not list are not served).
// local is the cluster whose endpoints it prefers, "" for none.
func newInput(imp *kubesource.ServiceImport, slices_ []*kubesource.EndpointSlice, local string) importInput {
	in := importInput{imp: imp, local: local}
	in.checkPorts()
	if !imp.Headless {
		in.clusterSetIPs()
		return in
	}
	usable := make([]*kubesource.EndpointSlice, 0, len(slices_))
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
	in.endpoints = slices.DeleteFunc(kubesource.ServedEndpoints(usable, false, in.conflicts()),
		func(ep kubesource.EndpointAddr) bool { return !imp.ServesFamilyOf(ep.Addr) })
	return in
}

// clusterSetIPs keeps the IPs of the import's families; one of another
// family is a problem (a dual-stack IP list with a single-stack
// ipFamilies), not served.
func (in *importInput) clusterSetIPs() {
	for _, ip := range in.imp.IPs {
		if in.imp.ServesFamilyOf(ip) {
			in.ips = append(in.ips, ip)
		} else {
			in.problem(fmt.Sprintf("IP %s is not of the import's ipFamilies: not served", ip))
		}
	}
	if len(in.ips) == 0 {
		in.problem("type ClusterSetIP without IPs: not served until it has some")
	}
}

// conflicts returns the duplicate callback of ServedEndpoints, which notes
// addresses claimed by two clusters: one line per pair of clusters (with
// the lowest such address as an example), not one per address.
func (in *importInput) conflicts() func(kept, dropped kubesource.EndpointAddr) {
	type pair struct{ kept, dropped string }
	type example struct {
		line int // index in problems
		addr netip.Addr
	}
	seen := map[pair]example{}
	return func(kept, dropped kubesource.EndpointAddr) {
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
func (in *importInput) usableSlice(s *kubesource.EndpointSlice) bool {
	switch id := strings.ToLower(s.SourceCluster); {
	case s.SourceCluster == "":
		in.problem(fmt.Sprintf("EndpointSlice %s has no %s label: skipped", s.Name(), kubesource.LabelSourceCluster))
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

// importFacts computes the facts of in; nil when the import has no name
// in DNS.
func importFacts(in importInput) *dnszone.Facts {
	imp := in.imp
	key := imp.Name() + "." + imp.Namespace()
	if !imp.Headless {
		if len(in.ips) == 0 {
			return nil
		}
		return dnszone.NewVirtual(key, in.ips, ports(imp.Ports))
	}
	if len(in.endpoints) == 0 {
		return nil // no ready endpoint in any cluster: NXDOMAIN
	}
	g := newGroups(imp.Ports, in.slicePorts, in.local)
	eps := make([]dnszone.EndpointFacts, 0, len(in.endpoints))
	for _, ep := range in.endpoints {
		// The dashed address of an endpoint without a hostname is not
		// kept: derived again when needed.
		named := dnsname.DashedIsLabel(ep.Addr)
		if ep.Hostname != "" {
			named = dnsname.IsLabel(ep.Hostname)
		}
		if !named {
			log.Warningf("endpoint %s of %s: hostname %q is not a DNS label, it has no name of its own", ep.Addr, key, hostname(ep))
		}
		eps = append(eps, dnszone.NewEndpoint(ep.Addr, ep.Hostname, g.of(ep), named))
	}
	return dnszone.NewHeadless(key, eps, ports(imp.Ports), g.list)
}

// ports are an import's ports for SRV records (TCP when the import does
// not say).
func ports(ps []kubesource.Port) []dnszone.SRVPort {
	out := make([]dnszone.SRVPort, 0, len(ps))
	for _, p := range ps {
		out = append(out, dnszone.SRVPort{Name: p.Name, Proto: protocol(p.Protocol), Number: uint16(p.Port)})
	}
	return out
}

// groups are the endpoint groups of a headless import: a host name is
// "<hostname>.<clusterid>", and an SRV target's port numbers are those of
// its slice's ports of the same name and protocol, when the slice has
// them. Slices of one cluster with the same numbers share a group. The
// groups of the local cluster, when given, are Preferred: the service name
// answers with their endpoints alone when there are any (dnszone).
type groups struct {
	ports      []kubesource.Port
	slicePorts map[string]map[string]int32
	local      string
	list       []dnszone.Group
	bySig      map[string]uint8
}

func newGroups(ports []kubesource.Port, slicePorts map[string]map[string]int32, local string) *groups {
	return &groups{ports: ports, slicePorts: slicePorts, local: local, bySig: map[string]uint8{}}
}

// of is the group of ep, added when new. Past 256 groups (a cluster of
// many slices whose port numbers all differ) the cluster's first group
// stands in: the host names stay right, the port numbers may not.
func (g *groups) of(ep kubesource.EndpointAddr) uint8 {
	suffix := "." + ep.Cluster
	numbers := make([]uint16, len(g.ports))
	for i, p := range g.ports {
		if n, ok := g.slicePorts[ep.Slice][p.Name+"/"+protocol(p.Protocol)]; ok {
			numbers[i] = uint16(n)
		}
	}
	sig := fmt.Sprint(suffix, numbers)
	if i, ok := g.bySig[sig]; ok {
		return i
	}
	if len(g.list) == 256 {
		return g.bySig[suffix]
	}
	i := uint8(len(g.list))
	g.list = append(g.list, dnszone.Group{Suffix: suffix, Ports: numbers, Preferred: g.local != "" && ep.Cluster == g.local})
	g.bySig[sig] = i
	if _, ok := g.bySig[suffix]; !ok {
		g.bySig[suffix] = i
	}
	return i
}

// hostname is the specification's hostname of an endpoint: its hostname
// field, else a unique system-assigned identifier, its address with dashes
// (as the cluster-local schema names such endpoints).
func hostname(ep kubesource.EndpointAddr) string {
	if ep.Hostname != "" {
		return ep.Hostname
	}
	return dnsname.Dashed(ep.Addr)
}

// ptrRecord is one candidate PTR record: endpoint ep of an import's facts
// (the import's own name for a ClusterSetIP), and the name it points to.
type ptrRecord struct {
	imp    kubesource.Key
	svc    *dnszone.Facts
	ep     int
	target string
}

// ptrRecords are the PTR records an import would give under zone: each
// clusterset IP to the service name, each named headless endpoint to its
// host name.
func ptrRecords(key kubesource.Key, svc *dnszone.Facts, zone string) map[netip.Addr]ptrRecord {
	out := map[netip.Addr]ptrRecord{}
	name := dnszone.ServiceName(svc, zone)
	for i := range svc.NumEndpoints() {
		target := svc.HostName(i, name)
		switch {
		case svc.Kind() == dnszone.Virtual:
			target = name
		case target == "":
			continue
		}
		if _, ok := out[svc.EndpointAddr(i)]; !ok { // the first endpoint at an address has its record
			out[svc.EndpointAddr(i)] = ptrRecord{imp: key, svc: svc, ep: i, target: target}
		}
	}
	return out
}
