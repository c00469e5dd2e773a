package main

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// dropMetrics are the counters that show a server shedding load: ours's
// admission (in the handler, and in the kernel at its listeners), stock's shed, and forward's refusals past max_concurrent.
var dropMetrics = []string{
	"coredns_clusterfirst_dropped_total",
	"coredns_clusterfirst_listener_drops_total",
	"coredns_shed_dropped_total",
	"coredns_forward_max_concurrent_rejects_total",
}

// dropCounters sums each of dropMetrics over its labels, by metric and,
// for ours, by class.
func dropCounters(ctx context.Context, s *server) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.metricsURL(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range dropMetrics {
			if !strings.HasPrefix(line, name) {
				continue
			}
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				continue
			}
			key := strings.TrimPrefix(strings.TrimSuffix(name, "_total"), "coredns_")
			for _, label := range []string{`class="`, `reason="`} {
				if _, value, ok := strings.Cut(line, label); ok {
					key += "/" + value[:strings.IndexByte(value, '"')]
				}
			}
			out[key] += v
		}
	}
	return out, sc.Err()
}
