package kubeschema

import (
	"cmp"
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
	// zones are the forward zones, in the order of Kubeschema.forward.
	zones []*zoneData
	// ptr holds the PTR records by address, from every zone's services, in
	// shards by the address's last byte: a change copies the shards of the
	// addresses it touches, not every address of the cluster.
	ptr [ptrShards]map[netip.Addr][]ptrRecord
	// serial of the SOA: changes whenever the data does.
	serial uint32
}

const ptrShards = 256

// ptrShard is the shard of ip: its last byte, which spreads the sequential
// addresses clusters allocate.
func ptrShard(ip netip.Addr) int { return int(ip.As16()[15]) }

// ptrOf returns the PTR records of ip.
func (s *snapshot) ptrOf(ip netip.Addr) []ptrRecord { return s.ptr[ptrShard(ip)][ip] }

// zoneData is one forward zone's records.
type zoneData struct {
	origin string // "cluster.local."
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
	// services by namespace, then by service name; only services that
	// exist in DNS (a headless service without ready endpoints does not),
	// and only namespaces that have one: <ns>.svc.<zone> exists (as an
	// empty non-terminal) while its map does. A change copies the map of
	// namespaces and the namespace it touches, not every service.
	services map[string]map[string]*serviceRecords
}

// ptrRecord is one PTR answer, with the service it came from so a rebuild
// of that service can replace it.
type ptrRecord struct {
	service string // "<ns>/<svc>"
	rr      *dns.PTR
}

// serviceRecords are the precomputed answers of one service in one zone.
type serviceRecords struct {
	kind     watchcache.ServiceKind
	a, aaaa  []dns.RR
	cname    *dns.CNAME
	srv      []dns.RR // SRV of the bare service name: every named port
	srvExtra []dns.RR
	ports    []portRecords // named ports, by key "_http._tcp"
	hosts    map[string]*hostRecords
	// turn rotates multi-record answers between responses.
	turn atomic.Uint32
}

type portRecords struct {
	key        string // "_http._tcp"
	srv, extra []dns.RR
}

type hostRecords struct {
	a, aaaa []dns.RR
}

// buildInput is one service with its served endpoints.
type buildInput struct {
	svc       *watchcache.Service
	endpoints []watchcache.EndpointAddr
	// ports of the endpoints by "<name>/<proto>", from the slices: for a
	// headless service clients connect to these, not to the service port.
	slicePorts map[string]int32
}

// buildService computes the records of in for zone with ttl; nil when the
// service has no name in DNS.
func buildService(in buildInput, origin string, ttl uint32, o *options) *serviceRecords {
	svc := in.svc
	name := svc.Name() + "." + svc.Namespace() + ".svc." + origin
	r := &serviceRecords{kind: svc.Kind}
	switch svc.Kind {
	case watchcache.KindExternalName:
		if svc.ExternalName == "" {
			return nil
		}
		r.cname = &dns.CNAME{Hdr: answer.Hdr(name, dns.TypeCNAME, ttl), Target: dns.Fqdn(svc.ExternalName)}
		return r
	case watchcache.KindClusterIP:
		if o.ignoreEmptyService && len(in.endpoints) == 0 {
			return nil
		}
		r.a, r.aaaa = answer.AddrRecords(name, svc.ClusterIPs, ttl)
		r.addPorts(svc.Ports, name, ttl, []target{{name: name, a: r.a, aaaa: r.aaaa}}, nil)
		return r
	}
	if len(in.endpoints) == 0 {
		return nil // headless without ready endpoints: NXDOMAIN (schema 1.0.1)
	}
	addrs := make([]netip.Addr, 0, len(in.endpoints))
	for _, ep := range in.endpoints {
		addrs = append(addrs, ep.Addr)
	}
	r.a, r.aaaa = answer.AddrRecords(name, addrs, ttl)
	targets := r.addHosts(in.endpoints, name, ttl, o)
	r.addPorts(svc.Ports, name, ttl, targets, in.slicePorts)
	return r
}

// target is one SRV target name and its address records.
type target struct {
	name    string
	a, aaaa []dns.RR
}

// addHosts builds <hostname>.<svc>... for each endpoint and returns the
// SRV targets, one per hostname, in hostname order.
func (r *serviceRecords) addHosts(eps []watchcache.EndpointAddr, svcName string, ttl uint32, o *options) []target {
	r.hosts = map[string]*hostRecords{}
	for _, ep := range eps {
		host := endpointHostname(ep, o.endpointPodNames)
		if !dnsname.IsLabel(host) {
			log.Warningf("endpoint %s of %s: hostname %q is not a DNS label, skipped", ep.Addr, svcName, host)
			continue
		}
		h := r.hosts[host]
		if h == nil {
			h = &hostRecords{}
			r.hosts[host] = h
		}
		owner := host + "." + svcName
		if ep.Addr.Is4() {
			h.a = append(h.a, &dns.A{Hdr: answer.Hdr(owner, dns.TypeA, ttl), A: ep.Addr.AsSlice()})
		} else {
			h.aaaa = append(h.aaaa, &dns.AAAA{Hdr: answer.Hdr(owner, dns.TypeAAAA, ttl), AAAA: ep.Addr.AsSlice()})
		}
	}
	targets := make([]target, 0, len(r.hosts))
	for host, h := range r.hosts {
		targets = append(targets, target{name: host + "." + svcName, a: h.a, aaaa: h.aaaa})
	}
	slices.SortFunc(targets, func(a, b target) int { return cmp.Compare(a.name, b.name) })
	return targets
}

// endpointHostname is the schema's hostname of an endpoint: its hostname
// field, else (endpoint_pod_names) its pod's name, else its dashed address.
func endpointHostname(ep watchcache.EndpointAddr, podNames bool) string {
	switch {
	case ep.Hostname != "":
		return ep.Hostname
	case podNames && ep.PodName != "":
		return ep.PodName
	}
	return dnsname.Dashed(ep.Addr)
}

// addPorts builds the SRV records: one per named port and target. Unnamed
// ports have no SRV record (the schema says so).
func (r *serviceRecords) addPorts(ports []watchcache.Port, svcName string, ttl uint32, targets []target, slicePorts map[string]int32) {
	if len(targets) == 0 {
		return
	}
	weight := uint16(max(1, 100/len(targets)))
	extra := targetAddrs(targets)
	for _, p := range ports {
		if p.Name == "" || !dnsname.IsLabel(p.Name) || !dnsname.IsLabel(p.Protocol) {
			continue
		}
		number := p.Port
		if n, ok := slicePorts[p.Name+"/"+p.Protocol]; ok {
			number = n
		}
		owner := "_" + p.Name + "._" + p.Protocol + "." + svcName
		pr := portRecords{key: owner[:len(p.Name)+len(p.Protocol)+3], extra: extra}
		for _, t := range targets {
			pr.srv = append(pr.srv, &dns.SRV{Hdr: answer.Hdr(owner, dns.TypeSRV, ttl), Priority: 0, Weight: weight, Port: uint16(number), Target: t.name})
		}
		r.setPort(pr)
		r.srv = append(r.srv, pr.srv...)
	}
	if len(r.srv) > 0 {
		r.srvExtra = extra
	}
}

// targetAddrs are the address records of the targets, in order: the
// additional section of every SRV answer of the service, one slice shared
// by all its ports. Clipped, so that appending to a reply's additional
// section (an OPT record) copies rather than writes into it.
func targetAddrs(targets []target) []dns.RR {
	if len(targets) == 1 && len(targets[0].aaaa) == 0 {
		return slices.Clip(targets[0].a)
	}
	var out []dns.RR
	for _, t := range targets {
		out = append(append(out, t.a...), t.aaaa...)
	}
	return slices.Clip(out)
}

// setPort adds pr, replacing a port of the same key (as a map would).
func (r *serviceRecords) setPort(pr portRecords) {
	for i := range r.ports {
		if r.ports[i].key == pr.key {
			r.ports[i] = pr
			return
		}
	}
	r.ports = append(r.ports, pr)
}

// port is the named port key ("_http._tcp"), or nil. A service has a
// handful of ports: a scan beats a map and costs no map per service.
func (r *serviceRecords) port(key string) *portRecords {
	for i := range r.ports {
		if r.ports[i].key == key {
			return &r.ports[i]
		}
	}
	return nil
}

// hasProto tells whether a named port has the protocol proto ("_tcp").
func (r *serviceRecords) hasProto(proto string) bool {
	for _, p := range r.ports {
		if _, pp, _ := strings.Cut(p.key, "."); pp == proto {
			return true
		}
	}
	return false
}

// ptrRecords are the PTR records a service contributes: its cluster IPs,
// and for a headless service every served endpoint.
func ptrRecords(key string, r *serviceRecords, ttl uint32) map[netip.Addr]ptrRecord {
	out := map[netip.Addr]ptrRecord{}
	forPTR(r, func(rr dns.RR) {
		ip := answer.AddrOf(rr)
		out[ip] = ptrRecord{service: key, rr: &dns.PTR{Hdr: answer.Hdr(dnsname.ReverseName(ip), dns.TypePTR, ttl), Ptr: rr.Header().Name}}
	})
	return out
}

// forPTR calls fn with each address record that has a PTR record: the
// cluster IPs of a ClusterIP service, the endpoints of a headless one.
func forPTR(r *serviceRecords, fn func(dns.RR)) {
	each := func(rrs []dns.RR) {
		for _, rr := range rrs {
			fn(rr)
		}
	}
	if r.kind == watchcache.KindClusterIP {
		each(r.a)
		each(r.aaaa)
		return
	}
	for _, h := range r.hosts {
		each(h.a)
		each(h.aaaa)
	}
}
