package kubeschema

import (
	"cmp"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

// kubeschema as the backend of k8s_external (plugin/k8sexternal): the
// method set of CoreDNS's k8s_external Externaler, which the stock
// kubernetes plugin has too, so that k8s_external takes either plugin.
//
// The answers are made per query from the cache, not from the snapshot:
// the snapshot keeps neither external IPs nor the endpoints of ClusterIP
// services (which `headless` serves by hostname), and an external zone is
// asked far less often than the cluster zone. A query costs a map lookup
// and the records' allocations.

// externalKeyPrefix is the first element of the keys of the msg.Services
// returned: k8s_external turns a key back into a name with msg.Domain,
// for SRV targets, as it does for the stock plugin's keys.
const externalKeyPrefix = "c"

// noPort stands for "no port" in the msg.Services of a service without
// ports, as in the stock plugin: k8s_external makes address records of
// them and no SRV record.
const noPort = -1

// externalName is a name of an external zone, split: <svc>.<ns>,
// _<port>._<proto>.<svc>.<ns>, or <endpoint>.<svc>.<ns>; an empty service
// is the namespace alone.
type externalName struct {
	namespace, service, endpoint, port, proto string
}

// parseExternalName splits name (lower case) below zone; false for a name
// not below the zone, with an empty label, or with more labels than any of
// the forms.
func parseExternalName(name, zone string) (externalName, bool) {
	base, err := dnsutil.TrimZone(name, zone)
	labels := dns.SplitDomainName(base)
	var n externalName
	if err != nil || slices.Contains(labels, "") {
		return n, false // not below the zone, or an empty label: no such name
	}
	switch len(labels) {
	case 4:
		n.port, n.proto = strings.TrimPrefix(labels[0], "_"), strings.TrimPrefix(labels[1], "_")
	case 3:
		n.endpoint = labels[0]
	case 2, 1:
	default:
		return n, false
	}
	n.namespace = labels[len(labels)-1]
	if len(labels) > 1 {
		n.service = labels[len(labels)-2]
	}
	return n, true
}

// matches tells whether port p is the one the name asks for (any when it
// names none).
func (n *externalName) matches(p kubesource.Port) bool {
	return (n.port == "" || n.port == p.Name) && (n.proto == "" || n.proto == p.Protocol)
}

// External answers a name of the external zone state.Zone: the external
// IPs of a service (spec.externalIPs and load balancer ingress IPs), and
// with headless the endpoints of a headless service without external IPs
// (and of any service by endpoint name). The rcode is NXDOMAIN when
// nothing matches, NOERROR for an existing namespace alone, SERVFAIL
// before the cache has synced. Reverse names are not served: there is no
// index of external IPs (NXDOMAIN).
func (k *Kubeschema) External(state request.Request, headless bool) ([]msg.Service, int) {
	if k.data == nil || k.Snapshot() == nil {
		return nil, dns.RcodeServerFailure
	}
	n, ok := parseExternalName(state.Name(), state.Zone)
	if !ok || n.namespace == "" || !k.namespaceExists(n.namespace) {
		return nil, dns.RcodeNameError
	}
	if n.service == "" {
		return nil, dns.RcodeSuccess
	}
	svc := k.data.Service(n.namespace, n.service)
	if svc == nil {
		return nil, dns.RcodeNameError
	}
	key := externalKey(state.Zone, svc)
	var out []msg.Service
	switch {
	case headless && len(svc.ExternalIPs()) == 0 && (isHeadless(svc) || n.endpoint != ""):
		out = k.externalEndpoints(svc, &n, key)
	case n.endpoint == "":
		out = k.externalAddrs(svc, &n, key)
	}
	if len(out) == 0 {
		return nil, dns.RcodeNameError
	}
	if state.QType() == dns.TypePTR {
		return nil, dns.RcodeSuccess // the name exists, without PTR records
	}
	return out, dns.RcodeSuccess
}

// namespaceExists tells whether ns is served and exists: with
// namespace_labels it is a watched namespace that matches; else a
// namespace with at least one served service (namespaces are not watched
// then).
func (k *Kubeschema) namespaceExists(ns string) bool {
	if !k.serves(k.data, ns) {
		return false
	}
	if k.opts.namespaceLabels != nil {
		return true // serves found the namespace and its labels
	}
	return k.Snapshot().HasNamespace(ns)
}

func isHeadless(svc *kubesource.Service) bool {
	return svc.Kind == kubesource.HeadlessWithSelector || svc.Kind == kubesource.HeadlessWithoutSelector
}

// externalKey is the key of svc's records in zone, in msg.Path form.
func externalKey(zone string, svc *kubesource.Service) string {
	return msg.Path(zone, externalKeyPrefix) + "/" + svc.Namespace() + "/" + svc.Name()
}

// externalAddrs are svc's external IPs, one msg.Service for each port that
// the name matches.
func (k *Kubeschema) externalAddrs(svc *kubesource.Service, n *externalName, key string) []msg.Service {
	ports := portsOrNone(svc.Ports)
	var out []msg.Service
	for _, ip := range svc.ExternalIPs() {
		for _, p := range ports {
			if n.matches(p) {
				out = append(out, msg.Service{Host: ip.String(), Port: int(p.Port), TTL: k.TTL, Key: key})
			}
		}
	}
	return out
}

// externalEndpoints are svc's served endpoints (those with the name's
// hostname when it has one), one msg.Service for each port of the
// endpoint's slice that the name matches; the key ends in the hostname,
// which makes the SRV target <hostname>.<svc>.<ns>.<zone>.
func (k *Kubeschema) externalEndpoints(svc *kubesource.Service, n *externalName, key string) []msg.Service {
	if k.opts.noEndpoints {
		return nil
	}
	ss := k.data.SlicesForService(svc.Namespace(), svc.Name())
	portsOf := make(map[string][]kubesource.Port, len(ss))
	for _, s := range ss {
		portsOf[s.Name()] = portsOrNone(s.Ports)
	}
	var out []msg.Service
	for _, ep := range kubesource.ServedEndpoints(ss, svc.PublishNotReady, nil) {
		host := cmp.Or(explicitHostname(ep, k.opts.endpointPodNames), dnsname.Dashed(ep.Addr))
		if n.endpoint != "" && n.endpoint != host {
			continue
		}
		for _, p := range portsOf[ep.Slice] {
			if n.matches(p) {
				out = append(out, msg.Service{Host: ep.Addr.String(), Port: int(p.Port), TTL: k.TTL, Key: key + "/" + host})
			}
		}
	}
	return out
}

// portsOrNone is ps, or the one "no port" entry when there are none, so
// that a service without ports still has its addresses served.
func portsOrNone(ps []kubesource.Port) []kubesource.Port {
	if len(ps) == 0 {
		return []kubesource.Port{{Port: noPort}}
	}
	return ps
}

// ExternalAddress returns the addresses of the external zone's name
// server: where this server listens (the host's addresses when it listens
// on all). k8s_external sets the owner name and TTL.
func (k *Kubeschema) ExternalAddress(state request.Request, headless bool) []dns.RR {
	out := make([]dns.RR, 0, len(k.NSAddrs))
	for _, a := range k.NSAddrs {
		out = append(out, dnszone.NewAddrRecord(state.Zone, a, k.TTL))
	}
	return out
}

// ExternalSerial is the external zone's SOA serial: the snapshot's, which
// changes whenever a service does.
func (k *Kubeschema) ExternalSerial(string) uint32 {
	if s := k.Snapshot(); s != nil {
		return s.Serial()
	}
	return 0
}

// ExternalServices lists what External answers in zone, for zone
// transfers, in the stock plugin's form: the external IPs of each service
// under its key, and again under the key of each named port
// (.../_<proto>/_<port>, TargetStrip 2); with headless, the endpoints of
// headless services without external IPs by "<key>/endpoint", and their
// SRV targets by "<key>/_<proto>/_<port>/port.protocol".
func (k *Kubeschema) ExternalServices(zone string, headless bool) ([]msg.Service, map[string][]msg.Service) {
	endpoints := map[string][]msg.Service{}
	if k.data == nil {
		return nil, endpoints
	}
	var out []msg.Service
	for _, svc := range k.data.Services() {
		if !k.serves(k.data, svc.Namespace()) {
			continue
		}
		key := externalKey(zone, svc)
		if headless && len(svc.ExternalIPs()) == 0 && isHeadless(svc) {
			k.listEndpoints(endpoints, svc, key)
			continue
		}
		out = append(out, k.externalAddrs(svc, &externalName{}, key)...)
		for _, p := range svc.Ports {
			if p.Name == "" {
				continue // no SRV name
			}
			n := externalName{port: p.Name, proto: p.Protocol}
			for _, s := range k.externalAddrs(svc, &n, portKey(key, p)) {
				s.TargetStrip = 2
				out = append(out, s)
			}
		}
	}
	return out, endpoints
}

// listEndpoints adds a headless service's endpoints to m, in
// ExternalServices's form. The SRV names are those of the slices' named
// ports, which External matches.
func (k *Kubeschema) listEndpoints(m map[string][]msg.Service, svc *kubesource.Service, key string) {
	if eps := k.externalEndpoints(svc, &externalName{}, key); len(eps) > 0 {
		m[key+"/endpoint"] = eps
	}
	for _, p := range slicePorts(k.data.SlicesForService(svc.Namespace(), svc.Name())) {
		n := externalName{port: p.Name, proto: p.Protocol}
		srvs := k.externalEndpoints(svc, &n, key)
		for i := range srvs {
			srvs[i].Host, srvs[i].Key = msg.Domain(srvs[i].Key), portKey(key, p)
		}
		if len(srvs) > 0 {
			m[portKey(key, p)+"/port.protocol"] = srvs
		}
	}
}

// slicePorts are the named ports of slices, each once.
func slicePorts(ss []*kubesource.EndpointSlice) []kubesource.Port {
	var out []kubesource.Port
	for _, s := range ss {
		for _, p := range s.Ports {
			same := func(q kubesource.Port) bool { return q.Name == p.Name && q.Protocol == p.Protocol }
			if p.Name != "" && !slices.ContainsFunc(out, same) {
				out = append(out, p)
			}
		}
	}
	return out
}

// portKey is the key of a port's SRV name: _<port>._<proto>.<svc>...
func portKey(key string, p kubesource.Port) string { return key + "/_" + p.Protocol + "/_" + p.Name }
