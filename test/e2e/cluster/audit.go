package cluster

import (
	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The API server's audit log of the DNS servers' lists and watches
// (kubeapi's reader): its own record of which informer listed, from which
// pod, for servers that export no relist counter of their own (stock).

// dnsUser is the user both DNS servers call the API server as: the
// ServiceAccount coredns of kube-system (deploy/base's and kubeadm's).
const dnsUser = "system:serviceaccount:kube-system:coredns"

// DNSAuditPolicy records the DNS servers' lists and watches, nothing else.
var DNSAuditPolicy = kubeapi.AuditPolicy(dnsUser)

// AuditSize is the audit log's size now: the offset a later AuditLists
// starts from.
func AuditSize() int64 { return kubeapi.AuditSize(auditLog()) }

// AuditLists counts the lists the DNS servers were served since offset,
// by source address (a pod's IP) and resource.
func AuditLists(offset int64) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	err := kubeapi.ReadAudit(auditLog(), offset, func(ev kubeapi.AuditEvent) {
		if ev.User.Username != dnsUser || !ev.IsList() || len(ev.SourceIPs) == 0 {
			return
		}
		src := ev.SourceIPs[0]
		if out[src] == nil {
			out[src] = map[string]int{}
		}
		out[src][ev.ObjectRef.Resource]++
	})
	return out, err
}
