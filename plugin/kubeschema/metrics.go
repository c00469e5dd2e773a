package kubeschema

import "github.com/schemadns/schemadns/plugin/pkg/dnszone"

// metrics: coredns_kubeschema_requests_total and _synced, and the
// plugin="kubeschema" part of coredns_dns_programming_duration_seconds (see
// README.md).
var metrics = dnszone.NewMetrics(pluginName)
