package watchcache

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Well-known labels and annotations the cache reads.
const (
	// LabelServiceName ties an EndpointSlice to its Service.
	LabelServiceName = discoveryv1.LabelServiceName
	// LabelMultiClusterServiceName ties an EndpointSlice to a ServiceImport.
	LabelMultiClusterServiceName = "multicluster.kubernetes.io/service-name"
	// LabelSourceCluster names the member cluster an imported slice comes from.
	LabelSourceCluster = "multicluster.kubernetes.io/source-cluster"
	// AnnotationTolerateUnready is the legacy form of publishNotReadyAddresses.
	AnnotationTolerateUnready = "service.alpha.kubernetes.io/tolerate-unready-endpoints"
	// annotationTriggerTime is set by the EndpointSlice controller to the
	// time of the change that caused the slice to change.
	annotationTriggerTime = corev1.EndpointsLastChangeTriggerTime
)

// ServiceKind tells how DNS answers for a service are made; it is also the
// label of the programming latency histogram.
type ServiceKind string

// The service resources.
const (
	ClusterIP               ServiceKind = "cluster_ip"
	HeadlessWithSelector    ServiceKind = "headless_with_selector"
	HeadlessWithoutSelector ServiceKind = "headless_without_selector"
	ExternalName            ServiceKind = "external_name"
	ClusterSetIP            ServiceKind = "clusterset_ip"
	MulticlusterHeadless    ServiceKind = "multicluster_headless"
)

// Port is a service or slice port. Protocol is lower case ("tcp", "udp",
// "sctp"), as it appears in SRV names.
type Port struct {
	Name     string
	Protocol string
	Port     int32
}

// Service is what DNS needs of a core/v1 Service.
type Service struct {
	objectMeta
	Kind ServiceKind
	// ClusterIPs are the parsed spec.clusterIPs; empty for headless and
	// ExternalName services.
	ClusterIPs   []netip.Addr
	ExternalName string
	Ports        []Port
	// external are the external IPs (see ExternalIPs). Most services
	// have none: a nil pointer then. A pointer takes 8 bytes where a
	// slice takes 24: the struct goes from the 160-byte allocation class
	// to the 176-byte one, not to 192.
	external *[]netip.Addr
	// PublishNotReady is publishNotReadyAddresses or the legacy annotation:
	// unready endpoints are served.
	PublishNotReady bool
	// Changed is when the object last changed in the API, as well as the
	// API tells it (see changeTime).
	Changed time.Time
}

// DeepCopyObject implements runtime.Object. Cached objects are never
// modified after their conversion (the decoder's or the transform's), so
// sharing is safe.
func (s *Service) DeepCopyObject() runtime.Object { return s }

// ExternalIPs are spec.externalIPs, then the IPs of
// status.loadBalancer.ingress, parsed, for k8s_external (read only).
func (s *Service) ExternalIPs() []netip.Addr {
	if s.external == nil {
		return nil
	}
	return *s.external
}

// Endpoint is one endpoint of an EndpointSlice.
type Endpoint struct {
	Addresses []netip.Addr
	// Hostname is the endpoint's hostname field.
	Hostname string
	// PodName is the name of the target Pod, for endpoint_pod_names.
	PodName     string
	Ready       bool
	Terminating bool
	// zone is 1 + the index of the endpoint's topology zone in its slice's
	// zones, 0 for none: two bytes in what was padding, where a string
	// would grow every endpoint by 16.
	zone uint16
}

// EndpointSlice is what DNS needs of a discovery/v1 EndpointSlice.
type EndpointSlice struct {
	objectMeta
	// Service is the service-name label (empty when absent).
	Service string
	// MultiClusterService and SourceCluster are the MCS labels.
	MultiClusterService string
	SourceCluster       string
	Endpoints           []Endpoint
	Ports               []Port
	Changed             time.Time
	// zones are the distinct zones of the endpoints, each once.
	zones []string
}

// DeepCopyObject implements runtime.Object.
func (s *EndpointSlice) DeepCopyObject() runtime.Object { return s }

// Zone is the topology zone of e, an endpoint of s; "" when it has none.
func (s *EndpointSlice) Zone(e *Endpoint) string {
	if e.zone == 0 || int(e.zone) > len(s.zones) {
		return ""
	}
	return s.zones[e.zone-1]
}

// zoneIndex is 1 + the index of zone in s.zones, added if new; 0 for no
// zone, or past the (theoretical) 65535th distinct zone of one slice.
func (s *EndpointSlice) zoneIndex(zone *string) uint16 {
	if zone == nil {
		return 0
	}
	return zoneIndexOf(s, *zone)
}

// zoneIndexOf is zoneIndex of a zone in bytes or a string: the wire
// decoder makes a string of a zone only the first time it sees it.
func zoneIndexOf[T []byte | string](s *EndpointSlice, zone T) uint16 {
	if len(zone) == 0 {
		return 0
	}
	if i := slices.IndexFunc(s.zones, func(z string) bool { return z == string(zone) }); i >= 0 {
		return uint16(i + 1)
	}
	if len(s.zones) >= math.MaxUint16 {
		return 0
	}
	s.zones = append(s.zones, string(zone))
	return uint16(len(s.zones))
}

// Pod is what `pods verified` needs of a Pod.
type Pod struct {
	objectMeta
	IPs []netip.Addr
}

// DeepCopyObject implements runtime.Object.
func (p *Pod) DeepCopyObject() runtime.Object { return p }

// Namespace is what the namespace_labels filter needs of a Namespace.
type Namespace struct {
	objectMeta
	Labels map[string]string
}

// DeepCopyObject implements runtime.Object.
func (n *Namespace) DeepCopyObject() runtime.Object { return n }

// ServiceImport is what DNS needs of an MCS ServiceImport, of whichever
// API version the cache reads (v1beta1 or v1alpha1).
type ServiceImport struct {
	objectMeta
	Headless bool
	IPs      []netip.Addr
	Ports    []Port
	// families are spec.ipFamilies; zero when the import does not say,
	// and then every family is served (see ServesFamilyOf).
	families ipFamilies
	// PreferClose is trafficDistribution PreferClose: clients should reach
	// the endpoints of their own cluster when it has ready ones.
	PreferClose bool
	Changed     time.Time
}

// ipFamilies is a set of address families.
type ipFamilies uint8

// The address families.
const (
	familyIPv4 ipFamilies = 1 << iota
	familyIPv6
)

// ServesFamilyOf tells whether a is of one of the import's ipFamilies;
// every family is when it names none.
func (s *ServiceImport) ServesFamilyOf(a netip.Addr) bool {
	f := s.families
	return f == 0 || a.Is4() && f&familyIPv4 != 0 || a.Is6() && f&familyIPv6 != 0
}

// trafficPreferClose is the trafficDistribution value that asks for the
// local cluster's endpoints first.
const trafficPreferClose = "PreferClose"

// DeepCopyObject implements runtime.Object.
func (s *ServiceImport) DeepCopyObject() runtime.Object { return s }

// ServiceCIDR is a range of the cluster's service addresses
// (networking.k8s.io/v1).
type ServiceCIDR struct {
	objectMeta
	CIDRs []netip.Prefix
}

// DeepCopyObject implements runtime.Object.
func (s *ServiceCIDR) DeepCopyObject() runtime.Object { return s }

// toServiceCIDR converts a networking/v1 ServiceCIDR; unparsable ranges
// are dropped.
func toServiceCIDR(obj any) (any, error) {
	sc, ok := obj.(*networkingv1.ServiceCIDR)
	if !ok {
		return obj, nil
	}
	out := &ServiceCIDR{objectMeta: newMeta(&sc.ObjectMeta)}
	for _, c := range sc.Spec.CIDRs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out.CIDRs = append(out.CIDRs, p.Masked())
		}
	}
	return out, nil
}

// toService converts a core/v1 Service; anything else passes through, so a
// tombstone or an already converted object is left alone.
func toService(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	out := &Service{
		objectMeta:      newMeta(&s.ObjectMeta),
		ExternalName:    strings.ToLower(strings.TrimSuffix(s.Spec.ExternalName, ".")),
		PublishNotReady: s.Spec.PublishNotReadyAddresses || s.Annotations[AnnotationTolerateUnready] == "true",
		Changed:         changeTime(&s.ObjectMeta),
	}
	out.Kind = serviceKind(s)
	if out.Kind == ClusterIP {
		out.ClusterIPs = parseAddrs(s.Spec.ClusterIPs, s.Spec.ClusterIP)
	}
	for _, p := range s.Spec.Ports {
		out.Ports = append(out.Ports, Port{Name: strings.ToLower(p.Name), Protocol: strings.ToLower(string(p.Protocol)), Port: p.Port})
	}
	if ips := externalIPs(s); ips != nil {
		out.external = &ips
	}
	return out, nil
}

// externalIPs parses a service's external addresses: spec.externalIPs,
// then the load balancer's ingress IPs (an ingress given by hostname only
// is not kept). nil when there are none, the common case.
func externalIPs(s *corev1.Service) []netip.Addr {
	ingress := s.Status.LoadBalancer.Ingress
	if len(s.Spec.ExternalIPs) == 0 && len(ingress) == 0 {
		return nil
	}
	out := make([]netip.Addr, 0, len(s.Spec.ExternalIPs)+len(ingress))
	add := func(ip string) {
		if a, err := netip.ParseAddr(ip); err == nil {
			out = append(out, a.Unmap())
		}
	}
	for _, ip := range s.Spec.ExternalIPs {
		add(ip)
	}
	for _, lb := range ingress {
		add(lb.IP) // "" when the ingress has a hostname only
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func serviceKind(s *corev1.Service) ServiceKind {
	return kindOf(string(s.Spec.Type), s.Spec.ClusterIP, len(s.Spec.Selector) > 0)
}

// parseAddrs parses clusterIPs, falling back to the single clusterIP field
// that older objects carry alone. Unparsable entries ("None") are dropped.
func parseAddrs(ips []string, single string) []netip.Addr {
	if len(ips) == 0 && single != "" {
		ips = []string{single}
	}
	var out []netip.Addr
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// warned remembers which odd-object warnings were logged, so an object
// that is updated often is reported once, not on every update. It only
// grows with the number of distinct odd objects ever seen.
var warned sync.Map

func warnOnce(key, format string, args ...any) {
	if _, seen := warned.LoadOrStore(key, true); !seen {
		log.Warningf(format, args...)
	}
}

// toEndpointSlice converts a discovery/v1 EndpointSlice, keeping pod names.
func toEndpointSlice(obj any) (any, error) { return convertSlice(obj, true) }

// convertSlice converts a discovery/v1 EndpointSlice. Endpoints of an
// address type DNS cannot serve (FQDN) or with unparsable addresses are
// dropped with a log line. decodeSlice makes the same of the protobuf
// encoding directly; the helpers below are shared by both.
func convertSlice(obj any, podNames bool) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &EndpointSlice{
		objectMeta:          newMeta(&s.ObjectMeta),
		Service:             s.Labels[LabelServiceName],
		MultiClusterService: s.Labels[LabelMultiClusterServiceName],
		SourceCluster:       s.Labels[LabelSourceCluster],
		Changed:             changeTime(&s.ObjectMeta),
	}
	if out.isBookmark() {
		return out, nil // a bookmark: no service, no address type, nothing to warn of
	}
	warnUnlabelled(out)
	if !servedAddressType(out, s.AddressType) {
		return out, nil
	}
	// One array holds the addresses of every endpoint (one each, as the
	// EndpointSlice controller writes them): an allocation per endpoint
	// is a tenth of a cached endpoint's memory.
	n := 0
	for i := range s.Endpoints {
		n += len(s.Endpoints[i].Addresses)
	}
	addrs := make([]netip.Addr, 0, n)
	out.Endpoints = make([]Endpoint, 0, len(s.Endpoints))
	for i := range s.Endpoints {
		var ep Endpoint
		var ok bool
		if ep, addrs, ok = toEndpoint(out, s.AddressType, &s.Endpoints[i], addrs); ok {
			if !podNames {
				ep.PodName = ""
			}
			ep.zone = out.zoneIndex(s.Endpoints[i].Zone)
			out.Endpoints = append(out.Endpoints, ep)
		}
	}
	for _, p := range s.Ports {
		out.Ports = append(out.Ports, toSlicePort(p))
	}
	out.zones = slices.Clip(out.zones)
	return out, nil
}

// warnUnlabelled logs, once, a slice that belongs to no service.
func warnUnlabelled(s *EndpointSlice) {
	if s.Service == "" && s.MultiClusterService == "" {
		warnOnce(s.namespace+"/"+s.name+"/unlabelled", "EndpointSlice %s/%s has neither %s nor %s: it belongs to no service and is not served",
			s.namespace, s.name, LabelServiceName, LabelMultiClusterServiceName)
	}
}

// servedAddressType tells whether DNS serves endpoints of the address
// type t (IPv4, IPv6: not FQDN), and logs once when not.
func servedAddressType(s *EndpointSlice, t discoveryv1.AddressType) bool {
	if t == discoveryv1.AddressTypeIPv4 || t == discoveryv1.AddressTypeIPv6 {
		return true
	}
	warnOnce(s.namespace+"/"+s.name+"/type", "EndpointSlice %s/%s: address type %q is not served", s.namespace, s.name, t)
	return false
}

func warnBadAddress(s *EndpointSlice, a string, t discoveryv1.AddressType) {
	log.Warningf("EndpointSlice %s/%s: address %q is not a valid %s address, skipped", s.namespace, s.name, a, t)
}

// toEndpoint converts one endpoint, its addresses appended to addrs (and
// its Addresses a part of that array); it returns the array.
func toEndpoint(s *EndpointSlice, t discoveryv1.AddressType, e *discoveryv1.Endpoint, addrs []netip.Addr) (Endpoint, []netip.Addr, bool) {
	ep := Endpoint{
		Ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
		Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
	}
	if e.Hostname != nil {
		ep.Hostname = strings.ToLower(*e.Hostname)
	}
	if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
		ep.PodName = strings.ToLower(e.TargetRef.Name)
	}
	start := len(addrs)
	for _, a := range e.Addresses {
		addr, err := netip.ParseAddr(a)
		if err != nil || (addr.Is4() != (t == discoveryv1.AddressTypeIPv4)) {
			warnBadAddress(s, a, t)
			continue
		}
		addrs = append(addrs, addr)
	}
	return endpointAddresses(s, ep, addrs, start)
}

// endpointAddresses gives ep the addresses of addrs from start on, capped
// so that appends to the array never reach them; false, logged, when there
// are none.
func endpointAddresses(s *EndpointSlice, ep Endpoint, addrs []netip.Addr, start int) (Endpoint, []netip.Addr, bool) {
	if len(addrs) == start {
		log.Warningf("EndpointSlice %s/%s: an endpoint has no usable address, skipped", s.namespace, s.name)
		return ep, addrs, false
	}
	ep.Addresses = addrs[start:len(addrs):len(addrs)]
	return ep, addrs, true
}

func toSlicePort(p discoveryv1.EndpointPort) Port {
	out := Port{Protocol: "tcp"}
	if p.Name != nil {
		out.Name = strings.ToLower(*p.Name)
	}
	if p.Protocol != nil {
		out.Protocol = strings.ToLower(string(*p.Protocol))
	}
	if p.Port != nil {
		out.Port = *p.Port
	}
	return out
}

func toPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &Pod{objectMeta: newMeta(&p.ObjectMeta)}
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			out.IPs = append(out.IPs, a.Unmap())
		}
	}
	if len(out.IPs) == 0 && p.Status.PodIP != "" {
		out.IPs = parseAddrs(nil, p.Status.PodIP)
	}
	return out, nil
}

func toNamespace(obj any) (any, error) {
	n, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &Namespace{objectMeta: newMeta(&n.ObjectMeta), Labels: n.Labels}, nil
}

// importSpec is the part of a ServiceImport's spec DNS reads; the API
// versions spell it alike.
type importSpec struct {
	headless bool
	ips      []string
	families []corev1.IPFamily
	traffic  *string
	ports    []Port
}

// toServiceImport converts a ServiceImport of either API version.
func toServiceImport(obj any) (any, error) {
	switch si := obj.(type) {
	case *mcsv1beta1.ServiceImport:
		spec := importSpec{headless: si.Spec.Type == mcsv1beta1.Headless, ips: si.Spec.IPs, families: si.Spec.IPFamilies, traffic: si.Spec.TrafficDistribution}
		for _, p := range si.Spec.Ports {
			spec.ports = append(spec.ports, importPort(p.Name, p.Protocol, p.Port))
		}
		return newServiceImport(&si.ObjectMeta, spec), nil
	case *mcsv1alpha1.ServiceImport:
		spec := importSpec{headless: si.Spec.Type == mcsv1alpha1.Headless, ips: si.Spec.IPs, families: si.Spec.IPFamilies, traffic: si.Spec.TrafficDistribution}
		for _, p := range si.Spec.Ports {
			spec.ports = append(spec.ports, importPort(p.Name, p.Protocol, p.Port))
		}
		return newServiceImport(&si.ObjectMeta, spec), nil
	}
	return obj, nil
}

func importPort(name string, proto corev1.Protocol, port int32) Port {
	return Port{Name: strings.ToLower(name), Protocol: strings.ToLower(string(proto)), Port: port}
}

func newServiceImport(om *metav1.ObjectMeta, spec importSpec) *ServiceImport {
	out := &ServiceImport{
		objectMeta:  newMeta(om),
		Headless:    spec.headless,
		IPs:         parseAddrs(spec.ips, ""),
		Ports:       spec.ports,
		PreferClose: spec.traffic != nil && *spec.traffic == trafficPreferClose,
		Changed:     changeTime(om),
	}
	for _, f := range spec.families {
		switch f {
		case corev1.IPv4Protocol:
			out.families |= familyIPv4
		case corev1.IPv6Protocol:
			out.families |= familyIPv6
		}
	}
	return out
}

// changeTime is when the object last changed in the API, when the API says
// so precisely: the EndpointSlice controller's trigger-time annotation. The
// metadata timestamps (creation, managedFields) have whole seconds only,
// too coarse for a latency measured in milliseconds, so without the
// annotation the zero time is returned and the cache falls back to the
// moment the watch delivered the change.
func changeTime(om *metav1.ObjectMeta) time.Time {
	if v, ok := om.Annotations[annotationTriggerTime]; ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t
		}
	}
	return time.Time{}
}

// Convert turns an API object (Service, EndpointSlice, Pod, Namespace,
// ServiceImport) into its cached form, as the informers do. Tests of code
// that reads the cache use it to make objects without an API server.
func Convert(obj runtime.Object) (any, error) {
	for _, f := range []func(any) (any, error){toService, toEndpointSlice, toPod, toNamespace, toServiceImport, toServiceCIDR} {
		if out, err := f(obj); err != nil || out != any(obj) {
			return out, err
		}
	}
	return nil, fmt.Errorf("watchcache: cannot convert %T", obj)
}
