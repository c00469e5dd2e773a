package multicluster

import "github.com/schemadns/schemadns/plugin/pkg/dnszone"

// metrics: coredns_multicluster_requests_total and _synced, and the
// plugin="multicluster" part of coredns_dns_programming_duration_seconds
// (see README.md).
var metrics = dnszone.NewMetrics(pluginName)
