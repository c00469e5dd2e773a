package watchcache

import (
	"net/netip"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a Service's metadata is read for, by index in the list.
var serviceAnnotations = []string{AnnotationTolerateUnready, annotationTriggerTime}

// wireService is a Service's spec and status as read, before conversion.
type wireService struct {
	typ             []byte
	clusterIP       []byte
	clusterIPs      []netip.Addr
	clusterIPsSeen  bool
	hasSelector     bool
	externalName    []byte
	publishNotReady bool
	ports           []Port
	externalIPs     []netip.Addr
	ingressIPs      []netip.Addr
}

// decodeService reads a core/v1 Service message into its cached form,
// equal to what toService makes of the generated type: the field numbers
// are those of k8s.io/api/core/v1/generated.proto.
func decodeService(b []byte) (*Service, error) {
	var m wireMeta
	var w wireService
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				r.err = readMeta(f.bytes, &m, nil, serviceAnnotations)
			}
		case 2:
			if r.want(&f, protowire.BytesType) {
				r.err = w.readSpec(f.bytes)
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				r.err = w.readStatus(f.bytes)
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return w.service(&m), nil
}

// service is the cached Service, as toService makes it.
func (w *wireService) service(m *wireMeta) *Service {
	out := &Service{
		objectMeta:      m.meta,
		ExternalName:    lowerString(trimDot(w.externalName)),
		PublishNotReady: w.publishNotReady || string(m.annotations[0]) == "true",
		Ports:           w.ports,
	}
	if v := m.annotations[1]; v != nil {
		out.Changed = parseChangeTime(string(v))
	}
	out.Kind = kindOf(string(w.typ), string(w.clusterIP), w.hasSelector)
	if out.Kind == ClusterIP {
		out.ClusterIPs = w.clusterIPs
		if !w.clusterIPsSeen {
			out.ClusterIPs = parseAddrs(nil, string(w.clusterIP))
		}
	}
	if ips := append(w.externalIPs, w.ingressIPs...); len(ips) > 0 {
		out.external = &ips
	}
	return out
}

func trimDot(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '.' {
		return b[:n-1]
	}
	return b
}

func (w *wireService) readSpec(b []byte) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				var p Port
				if r.err = readPort(f.bytes, &p); r.err == nil {
					w.ports = append(w.ports, p)
				}
			}
		case 2:
			if r.want(&f, protowire.BytesType) {
				_, _, r.err = mapEntry(f.bytes)
				w.hasSelector = true
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				w.clusterIP = f.bytes
			}
		case 4:
			if r.want(&f, protowire.BytesType) {
				w.typ = f.bytes
			}
		case 5:
			if r.want(&f, protowire.BytesType) {
				w.externalIPs = appendUnmapped(w.externalIPs, f.bytes)
			}
		case 10:
			if r.want(&f, protowire.BytesType) {
				w.externalName = f.bytes
			}
		case 13:
			if r.want(&f, protowire.VarintType) {
				w.publishNotReady = f.varint != 0
			}
		case 18:
			if r.want(&f, protowire.BytesType) {
				w.clusterIPsSeen = true
				w.clusterIPs = appendUnmapped(w.clusterIPs, f.bytes)
			}
		}
	}
	return r.err
}

// readStatus reads the load balancer's ingress IPs.
func (w *wireService) readStatus(b []byte) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		if f.num != 1 || !r.want(&f, protowire.BytesType) { // loadBalancer
			continue
		}
		lb := wireReader{b: f.bytes}
		var g wireField
		for lb.next(&g) {
			if g.num == 1 && lb.want(&g, protowire.BytesType) { // ingress
				lb.err = w.readIngress(g.bytes)
			}
		}
		r.err = lb.err
	}
	return r.err
}

func (w *wireService) readIngress(b []byte) error {
	var ip []byte
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		if f.num == 1 && r.want(&f, protowire.BytesType) {
			ip = f.bytes
		}
	}
	if r.err == nil {
		w.ingressIPs = appendUnmapped(w.ingressIPs, ip)
	}
	return r.err
}

// appendUnmapped appends the address b, IPv4-mapped ones as IPv4, when it
// parses.
func appendUnmapped(addrs []netip.Addr, b []byte) []netip.Addr {
	if a, err := parseAddr(b); err == nil {
		return append(addrs, a.Unmap())
	}
	return addrs
}

// readPort reads the name, protocol and number of a core/v1 ServicePort
// or a discovery/v1 EndpointPort (fields 1–3 of both), merging into p.
func readPort(b []byte, p *Port) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				p.Name = lowerString(f.bytes)
			}
		case 2:
			if r.want(&f, protowire.BytesType) {
				p.Protocol = lowerProtocol(f.bytes)
			}
		case 3:
			if r.want(&f, protowire.VarintType) {
				p.Port = int32(f.varint)
			}
		}
	}
	return r.err
}

// serviceList is a list of Services in their cached form.
type serviceList struct {
	metav1.ListMeta
	Items []*Service
}

// kindOf is serviceKind of a service's type, clusterIP and selector.
func kindOf(typ, clusterIP string, hasSelector bool) ServiceKind {
	switch {
	case typ == string(corev1.ServiceTypeExternalName):
		return ExternalName
	case clusterIP != corev1.ClusterIPNone && clusterIP != "":
		return ClusterIP
	case hasSelector:
		return HeadlessWithSelector
	default:
		return HeadlessWithoutSelector
	}
}
