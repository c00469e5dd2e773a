package kubeschema

import (
	"net/netip"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// podNameKind is what a name under pod.<zone> refers to; the rest of the
// grammar is dnszone's.
type podNameKind uint8

const (
	nameNone     podNameKind = iota // not a pod name: NXDOMAIN
	namePodLabel                    // pod.<zone>
	namePodNS                       // <ns>.pod.<zone>
	namePod                         // <dashed-ip>.<ns>.pod.<zone>
)

// podName is a name under pod.<zone>.
type podName struct {
	kind      podNameKind
	namespace string
	addr      netip.Addr
}

// parsePod splits the labels left of "pod".
func parsePod(labels string) podName {
	if labels == "" {
		return podName{kind: namePodLabel}
	}
	left, ns := dnsname.SplitLast(labels)
	if !dnsname.IsLabel(ns) {
		return podName{}
	}
	if left == "" {
		return podName{kind: namePodNS, namespace: ns}
	}
	if strings.IndexByte(left, '.') >= 0 {
		return podName{}
	}
	a, ok := dnsname.DashedAddr(left)
	if !ok {
		return podName{}
	}
	return podName{kind: namePod, namespace: ns, addr: a}
}
