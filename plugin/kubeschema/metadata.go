package kubeschema

import (
	"context"
	"net/netip"
	"strings"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
)

// Metadata implements metadata.Provider: what the query name means under
// the schema (kubeschema/kind, namespace, service, endpoint, port-name,
// protocol) and, with `pods verified`, which pod asked
// (kubeschema/client-namespace, client-pod-name); with `zonal`,
// kubeschema/zone: the topology zone of a zonal name. The name is parsed
// when the query comes; the values are handed out as they are.
func (k *Kubeschema) Metadata(ctx context.Context, state request.Request) context.Context {
	if k.opts.pods == podsVerified && k.data != nil {
		k.clientMetadata(ctx, state.IP())
	}
	zi, _ := k.ZoneIndex(state.Name())
	if zi < 0 || dnsname.IsReverseZone(k.Zones[zi]) {
		return ctx
	}
	rest, _ := dnsname.TrimZone(strings.ToLower(state.Name()), k.Zones[zi])
	p := dnszone.ParseName(rest)
	kind, namespace := "", p.Namespace
	switch p.Kind {
	case dnszone.NameService, dnszone.NameHost, dnszone.NameProto, dnszone.NamePort, dnszone.NameNamespace, dnszone.NameZonal:
		kind = "svc"
	case dnszone.NameOther:
		if pod := parsePod(p.Labels); p.Top == "pod" && (pod.kind == namePod || pod.kind == namePodNS) {
			kind, namespace = "pod", pod.namespace
		}
	}
	set := func(key, value string) {
		metadata.SetValueFunc(ctx, pluginName+"/"+key, func() string { return value })
	}
	set("kind", kind)
	set("namespace", namespace)
	set("service", p.Service)
	set("endpoint", p.Host)
	port, _ := dnsname.SplitLast(p.Port)
	set("port-name", strings.TrimPrefix(port, "_"))
	set("protocol", strings.TrimPrefix(p.Proto, "_"))
	if k.Zonal {
		set("zone", p.TopologyZone)
	}
	return ctx
}

// clientMetadata names the pod the query came from, by its address.
func (k *Kubeschema) clientMetadata(ctx context.Context, ip string) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return
	}
	pods := k.data.PodsByIP(a.Unmap())
	if len(pods) != 1 {
		return // none, or ambiguous (host-network pods share the node's IP)
	}
	pod := pods[0]
	metadata.SetValueFunc(ctx, pluginName+"/client-namespace", func() string { return pod.Namespace() })
	metadata.SetValueFunc(ctx, pluginName+"/client-pod-name", func() string { return pod.Name() })
}
