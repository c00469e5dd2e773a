package watchcache

import (
	"net/netip"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods are decoded straight into their cached form, as Services and
// EndpointSlices are: a Pod's protobuf is kilobytes (its spec, container
// statuses, managed fields), of which DNS keeps the name, namespace and
// addresses. At the scalability thresholds (150,000 pods) the generated
// Unmarshal made some 2 KB of garbage a pod at every list and relist, and
// most of the CPU of a start with `pods verified`.

// decodePod reads a core/v1 Pod message into its cached form, equal to
// what toPod makes of the generated type: the field numbers are those of
// k8s.io/api/core/v1/generated.proto (Pod: metadata 1, status 3;
// PodStatus: podIP 6, podIPs 12; PodIP: ip 1).
func decodePod(b []byte) (*Pod, error) {
	var m wireMeta
	var podIP []byte
	var ips []netip.Addr
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 1:
			if r.want(&f, protowire.BytesType) {
				r.err = readMeta(f.bytes, &m, nil, nil)
			}
		case 3:
			if r.want(&f, protowire.BytesType) {
				podIP, ips, r.err = readPodStatus(f.bytes, podIP, ips)
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(ips) == 0 && podIP != nil {
		ips = parseAddrs(nil, string(podIP))
	}
	return &Pod{objectMeta: m.meta, IPs: ips}, nil
}

// readPodStatus reads a PodStatus's podIP and the addresses of its podIPs
// (those that parse, IPv4-mapped ones as IPv4), merging into what an
// earlier status field of the same message gave.
func readPodStatus(b []byte, podIP []byte, ips []netip.Addr) ([]byte, []netip.Addr, error) {
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		switch f.num {
		case 6:
			if r.want(&f, protowire.BytesType) {
				podIP = f.bytes
			}
		case 12:
			if r.want(&f, protowire.BytesType) {
				var ip []byte
				ip, r.err = readPodIP(f.bytes)
				if r.err == nil {
					ips = appendUnmapped(ips, ip)
				}
			}
		}
	}
	return podIP, ips, r.err
}

// readPodIP reads a PodIP's ip.
func readPodIP(b []byte) ([]byte, error) {
	var ip []byte
	r := wireReader{b: b}
	var f wireField
	for r.next(&f) {
		if f.num == 1 && r.want(&f, protowire.BytesType) {
			ip = f.bytes
		}
	}
	return ip, r.err
}

// podList is a list of Pods in their cached form.
type podList struct {
	metav1.ListMeta
	Items []*Pod
}
