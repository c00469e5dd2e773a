package kubeschema

import (
	"cmp"
	"net/netip"
	"slices"
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
	// ptr holds the PTR records by address, from every zone's services.
	ptr map[netip.Addr][]ptrRecord
	// ptrOwned lists the addresses each service ("<ns>/<svc>") has in ptr,
	// so a rebuild removes exactly those.
	ptrOwned map[string][]netip.Addr
	// serial of the SOA: changes whenever the data does.
	serial uint32
}

// zoneData is one forward zone's records.
type zoneData struct {
	origin string // "cluster.local."
	// reverse zones (in-addr.arpa, ip6.arpa) answer PTR from snapshot.ptr.
	reverse bool
	soa     *dns.SOA
	ns      []dns.RR
	// nsA and nsAAAA are the address records of ns.dns.<zone>.
	nsA, nsAAAA []dns.RR
	version     []dns.RR
	// services by "<svc>.<ns>"; only services that exist in DNS (a headless
	// service without ready endpoints does not).
	services map[string]*serviceRecords
	// namespaces counts the services of each namespace: <ns>.svc.<zone>
	// exists (as an empty non-terminal) while it is above zero.
	namespaces map[string]int
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
	ports    map[string]*portRecords // "_http._tcp"
	protos   map[string]bool         // "_tcp"
	hosts    map[string]*hostRecords
	// turn rotates multi-record answers between responses.
	turn atomic.Uint32
}

type portRecords struct {
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
	r.ports, r.protos = map[string]*portRecords{}, map[string]bool{}
	if len(targets) == 0 {
		return
	}
	weight := uint16(max(1, 100/len(targets)))
	for _, p := range ports {
		if p.Name == "" || !dnsname.IsLabel(p.Name) || !dnsname.IsLabel(p.Protocol) {
			continue
		}
		number := p.Port
		if n, ok := slicePorts[p.Name+"/"+p.Protocol]; ok {
			number = n
		}
		key := "_" + p.Name + "._" + p.Protocol
		owner := key + "." + svcName
		pr := &portRecords{}
		for _, t := range targets {
			pr.srv = append(pr.srv, &dns.SRV{Hdr: answer.Hdr(owner, dns.TypeSRV, ttl), Priority: 0, Weight: weight, Port: uint16(number), Target: t.name})
			pr.extra = append(pr.extra, t.a...)
			pr.extra = append(pr.extra, t.aaaa...)
		}
		r.ports[key] = pr
		r.protos["_"+p.Protocol] = true
		r.srv = append(r.srv, pr.srv...)
	}
	if len(r.srv) > 0 {
		for _, t := range targets {
			r.srvExtra = append(r.srvExtra, t.a...)
			r.srvExtra = append(r.srvExtra, t.aaaa...)
		}
	}
}

// ptrRecords are the PTR records a service contributes: its cluster IPs,
// and for a headless service every served endpoint.
func ptrRecords(key string, r *serviceRecords, ttl uint32) map[netip.Addr]ptrRecord {
	out := map[netip.Addr]ptrRecord{}
	add := func(rrs []dns.RR) {
		for _, rr := range rrs {
			ip := answer.AddrOf(rr)
			out[ip] = ptrRecord{service: key, rr: &dns.PTR{Hdr: answer.Hdr(dnsname.ReverseName(ip), dns.TypePTR, ttl), Ptr: rr.Header().Name}}
		}
	}
	if r.kind == watchcache.KindClusterIP {
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
