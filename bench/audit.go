package main

import (
	"slices"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The threshold shape's API server keeps an audit log of the lists and
// watches of its admin user, the one the DNS servers and this tool call it
// as (kubeapi.AuditFlags): which informer listed, told apart by the
// client's user agent. Stock exports no relist counter; the log shows
// whether its informers listed again after the forced relist, and checks
// ours' counter.

// userAgents begin the user agents of the servers: ours sets its own
// (plugin/pkg/watchcache); stock CoreDNS sets "CoreDNS/<version> …" only
// in the cluster, and from a kubeconfig (as here) leaves client-go's,
// "<binary>/<version> (<os>/<arch>) kubernetes/<commit>": our binary is
// "coredns".
var userAgents = map[string][]string{server.KeyOurs: {"schemadns-coredns"}, server.KeyStock: {"CoreDNS/", "coredns/"}}

// fromTarget tells whether a user agent is the target's.
func fromTarget(userAgent, key string) bool {
	return slices.ContainsFunc(userAgents[key], func(prefix string) bool { return strings.HasPrefix(userAgent, prefix) })
}

// auditLists counts, by resource, the lists the API server served since
// offset to the target key.
func auditLists(log string, offset int64, key string) (map[string]int, error) {
	out := map[string]int{}
	err := kubeapi.ReadAudit(log, offset, func(ev kubeapi.AuditEvent) {
		if ev.IsList() && fromTarget(ev.UserAgent, key) {
			out[ev.ObjectRef.Resource]++
		}
	})
	return out, err
}
