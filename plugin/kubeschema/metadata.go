package kubeschema

import (
	"context"
	"net/netip"
	"strings"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"
	"github.com/schemadns/schemadns/plugin/pkg/answer"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// Metadata implements metadata.Provider: what the query name means under
// the schema (kubeschema/kind, namespace, service, endpoint, port-name,
// protocol) and, with `pods verified`, which pod asked
// (kubeschema/client-namespace, client-pod-name). Values are computed only
// when a consumer (log, acl, ...) asks for them.
func (k *Kubeschema) Metadata(ctx context.Context, state request.Request) context.Context {
	if k.opts.pods == podsVerified && k.data != nil {
		k.clientMetadata(ctx, state.IP())
	}
	zi, _ := k.zoneIndex(state.Name())
	if zi < 0 || answer.IsReverse(k.Zones[zi]) {
		return ctx
	}
	rest, _ := dnsname.TrimZone(strings.ToLower(state.Name()), k.Zones[zi])
	p := parseName(rest)
	kind := ""
	switch p.kind {
	case nameService, nameHost, nameProto, namePort, nameNamespace:
		kind = "svc"
	case namePod, namePodNS:
		kind = "pod"
	}
	set := func(key, value string) {
		metadata.SetValueFunc(ctx, pluginName+"/"+key, func() string { return value })
	}
	set("kind", kind)
	set("namespace", p.namespace)
	set("service", p.service)
	set("endpoint", p.host)
	port, _ := splitFromRight(p.port)
	set("port-name", strings.TrimPrefix(port, "_"))
	set("protocol", strings.TrimPrefix(p.proto, "_"))
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
