package watchcache

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What an EndpointSlice's metadata is read for, by index in the lists.
var (
	sliceLabels      = []string{LabelServiceName, LabelMultiClusterServiceName, LabelSourceCluster}
	sliceAnnotations = []string{annotationTriggerTime}
)

// decodeSlice reads a discovery/v1 EndpointSlice message into its cached
// form, equal to what convertSlice makes of the generated type: the
// field numbers are those of k8s.io/api/discovery/v1/generated.proto.
func decodeSlice(b []byte, podNames bool) (*EndpointSlice, error) {
	var m wireMeta
	var addressType []byte
	endpoints := 0
	out := &EndpointSlice{}
	// The ports are gathered on the stack (a slice has a few) and copied
	// once, at their number.
	var portSpace [4]Port
	ports := portSpace[:0]
	// The first pass reads the metadata and the address type, which the
	// endpoints are checked against wherever they come in the message.
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				r.err = readMeta(f.bytes, &m, sliceLabels, sliceAnnotations)
			}
		case 2:
			if r.want(&f, protowire.BytesType) {
				endpoints++
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				var p Port
				if r.err = readSlicePort(f.bytes, &p); r.err == nil {
					ports = append(ports, p)
				}
			}
		case 4:
			if r.want(&f, protowire.BytesType) {
				addressType = f.bytes
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(ports) > 0 {
		out.Ports = slices.Clone(ports)
	}
	out.objectMeta = m.meta
	out.Service = string(m.labels[0])
	out.MultiClusterService = string(m.labels[1])
	out.SourceCluster = string(m.labels[2])
	if v := m.annotations[0]; v != nil {
		out.Changed = parseChangeTime(string(v))
	}
	if out.isBookmark() {
		return out, nil // a bookmark: no service, no address type, nothing to warn of
	}
	warnUnlabelled(out)
	family := discoveryv1.AddressType(addressType)
	if !servedAddressType(out, family) {
		out.Ports = nil // as convertSlice: a slice not served has nothing
		return out, nil
	}
	if err := readEndpoints(b, out, family, endpoints, podNames); err != nil {
		return nil, err
	}
	return out, nil
}

// readEndpoints is the second pass: the endpoints, n of them, into out.
func readEndpoints(b []byte, out *EndpointSlice, family discoveryv1.AddressType, n int, podNames bool) error {
	// One address each is what the EndpointSlice controller writes; an
	// endpoint with more grows the array, and those before it keep the
	// old one.
	addrs := make([]netip.Addr, 0, n)
	out.Endpoints = make([]Endpoint, 0, n)
	names := nameBuffers.Get().(*endpointNameBuffer)
	defer names.release()
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		if f.num != 2 {
			continue
		}
		e := wireEndpoint{slice: out, family: family, podNames: podNames, addrs: addrs, start: len(addrs)}
		if r.err = e.read(f.bytes); r.err != nil {
			break
		}
		var ep Endpoint
		var ok bool
		if ep, addrs, ok = e.toEndpoint(); ok {
			ep.zone = zoneIndexOf(out, e.zone)
			out.Endpoints = append(out.Endpoints, ep)
			names.add(&e)
		}
	}
	out.zones = slices.Clip(out.zones)
	names.set(out.Endpoints)
	return r.err
}

// endpointNameBuffer gathers the hostnames and pod names of a slice's endpoints,
// lower-cased, in one buffer that becomes one string: one allocation for
// the names of a slice rather than one per endpoint, which were half of
// what decoding a slice allocated.
type endpointNameBuffer struct {
	buf []byte
	// spans are each kept endpoint's names in buf, in order.
	spans []endpointNames
}

type endpointNames struct{ host, pod span }

type span struct{ lo, hi int }

// nameBuffers are scratch: the names are copied into their string at the
// end, so nothing of a buffer outlives the decoding.
var nameBuffers = sync.Pool{New: func() any { return new(endpointNameBuffer) }}

func (n *endpointNameBuffer) release() {
	n.buf, n.spans = n.buf[:0], n.spans[:0]
	nameBuffers.Put(n)
}

// add appends e's names. A pod named as the endpoint's hostname, the
// usual case, shares its span.
func (n *endpointNameBuffer) add(e *wireEndpoint) {
	var names endpointNames
	names.host = n.appendLower(e.hostname)
	if string(e.targetKind) == "Pod" {
		if names.pod = names.host; !equalLower(e.targetName, n.buf[names.host.lo:names.host.hi]) {
			names.pod = n.appendLower(e.targetName)
		}
	}
	n.spans = append(n.spans, names)
}

func (n *endpointNameBuffer) appendLower(b []byte) span {
	lo := len(n.buf)
	if bytes.IndexFunc(b, func(r rune) bool { return r >= 0x80 }) >= 0 {
		n.buf = append(n.buf, strings.ToLower(string(b))...)
	} else {
		for _, c := range b {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			n.buf = append(n.buf, c)
		}
	}
	return span{lo, len(n.buf)}
}

// set gives the endpoints their names, parts of one string.
func (n *endpointNameBuffer) set(eps []Endpoint) {
	if len(n.buf) == 0 {
		return
	}
	all := string(n.buf)
	for i := range eps {
		sp := n.spans[i]
		eps[i].Hostname, eps[i].PodName = all[sp.host.lo:sp.host.hi], all[sp.pod.lo:sp.pod.hi]
	}
}

// wireEndpoint is one endpoint as it is read: its addresses parsed into
// the slice's array as they come, the rest kept for toEndpoint. Absent
// fields read as the conversion of the generated type takes them: ready
// unless said otherwise, no hostname, zone or target.
type wireEndpoint struct {
	slice  *EndpointSlice
	family discoveryv1.AddressType
	// podNames: the target's pod name is kept (endpoint_pod_names); the
	// target is not read otherwise.
	podNames bool
	// addrs is the slice's address array; this endpoint's are from start.
	addrs       []netip.Addr
	start       int
	ready       bool
	readySet    bool
	terminating bool
	hostname    []byte
	targetKind  []byte
	targetName  []byte
	zone        []byte
}

func (e *wireEndpoint) read(b []byte) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				e.addAddress(f.bytes)
			}
		case 2:
			if r.want(&f, protowire.BytesType) {
				r.err = e.readConditions(f.bytes)
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				e.hostname = f.bytes
			}
		case 4:
			if r.want(&f, protowire.BytesType) && e.podNames {
				r.err = e.readTargetRef(f.bytes)
			}
		case 5, 6, 8: // deprecatedTopology, nodeName, hints
			r.want(&f, protowire.BytesType)
		case 7:
			if r.want(&f, protowire.BytesType) {
				e.zone = f.bytes
			}
		}
	}
	return r.err
}

// addAddress parses one address of the endpoint; one that does not parse,
// or is not of the slice's family, is logged and skipped.
func (e *wireEndpoint) addAddress(b []byte) {
	if addr, err := parseAddr(b); err == nil && addr.Is4() == (e.family == discoveryv1.AddressTypeIPv4) {
		e.addrs = append(e.addrs, addr)
		return
	}
	warnBadAddress(e.slice, string(b), e.family)
}

func (e *wireEndpoint) readConditions(b []byte) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.VarintType) {
				e.ready, e.readySet = f.varint != 0, true
			}
		case 2: // serving
			r.want(&f, protowire.VarintType)
		case 3:
			if r.want(&f, protowire.VarintType) {
				e.terminating = f.varint != 0
			}
		}
	}
	return r.err
}

// readTargetRef reads a core/v1 ObjectReference's kind and name.
func (e *wireEndpoint) readTargetRef(b []byte) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				e.targetKind = f.bytes
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				e.targetName = f.bytes
			}
		case 2, 4, 5, 6, 7:
			r.want(&f, protowire.BytesType)
		}
	}
	return r.err
}

// toEndpoint is the endpoint read, and the slice's address array with its
// addresses; false when it has none usable.
func (e *wireEndpoint) toEndpoint() (Endpoint, []netip.Addr, bool) {
	// The names are set by endpointNameBuffer, once every endpoint is read.
	ep := Endpoint{Ready: e.ready || !e.readySet, Terminating: e.terminating}
	return endpointAddresses(e.slice, ep, e.addrs, e.start)
}

// equalLower tells whether strings.ToLower(string(b)) == string(lower).
func equalLower[T []byte | string](b []byte, lower T) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if c >= 0x80 {
			return lowerString(b) == string(lower)
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// lowerString is strings.ToLower of b, with one allocation.
func lowerString(b []byte) string {
	if bytes.IndexFunc(b, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 0x80 }) < 0 {
		return string(b)
	}
	return strings.ToLower(string(b))
}

// readSlicePort reads a discovery/v1 EndpointPort, merging into p as a
// repeated message field would; p starts as an absent protocol (TCP).
func readSlicePort(b []byte, p *Port) error {
	p.Protocol = "tcp"
	return readPort(b, p)
}

// lowerProtocol is the lower-case protocol, without an allocation for the
// three the API knows.
func lowerProtocol(b []byte) string {
	for _, p := range []string{"tcp", "udp", "sctp"} {
		if strings.EqualFold(string(b), p) {
			return p
		}
	}
	return lowerString(b)
}

// parseChangeTime parses the trigger-time annotation; the zero time when
// it does not parse (see changeTime).
func parseChangeTime(v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// sliceList is a list of EndpointSlices in their cached form, as the
// reflector reads a list: its metadata and its items.
type sliceList struct {
	metav1.ListMeta
	Items []*EndpointSlice
}

// readList reads a List message: its metadata into lm, and each item by
// decode.
func readList[T any](b []byte, lm *metav1.ListMeta, decode func([]byte) (*T, error)) ([]*T, error) {
	items := []*T{}
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				r.err = readListMeta(f.bytes, lm)
			}
		case 2:
			if r.want(&f, protowire.BytesType) {
				var item *T
				if item, r.err = decode(f.bytes); r.err == nil {
					items = append(items, item)
				}
			}
		}
	}
	return items, r.err
}

// readListMeta reads a ListMeta's fields into lm, merging: all but the
// selfLink (no longer set by the API server) and shardInfo, which the
// reflector does not read.
func readListMeta(b []byte, lm *metav1.ListMeta) error {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 2:
			if r.want(&f, protowire.BytesType) {
				lm.ResourceVersion = string(f.bytes)
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				lm.Continue = string(f.bytes)
			}
		case 4:
			if r.want(&f, protowire.VarintType) {
				n := int64(f.varint)
				lm.RemainingItemCount = &n
			}
		}
	}
	return r.err
}
