package kubeschema

import "github.com/schemadns/schemadns/plugin/pkg/dnszone"

// metrics: coredns_kubeschema_requests_total, _synced and
// _dns_programming_duration_seconds (see README.md).
var metrics = dnszone.NewMetrics(pluginName, "service kind")
