package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"github.com/schemadns/schemadns/internal/procstat"
)

// socketResult is ours at one GOMAXPROCS and number of listening sockets
// (multisocket): its saturation, and its CPU per query at a fixed load.
type socketResult struct {
	Procs, Sockets int
	CPUs           string  // the server's affinity
	Saturation     int     // q/s, by a ramp
	Rate           int     // the fixed load, q/s
	CPUPerQuery    float64 // µs of server CPU per answered query at Rate
	P99            float64 // ms, answered cluster queries at Rate
	Answered       float64 // share answered at Rate
}

// socketCases are the GOMAXPROCS and socket counts measured; with two
// procs the server shares its second CPU with the load.
var socketCases = []struct{ procs, sockets int }{{1, 1}, {1, 2}, {2, 1}, {2, 2}}

func (m *measurer) measureSockets(ctx context.Context, saturation int) ([]*socketResult, error) {
	st, err := startStub(upstreamSlow)
	if err != nil {
		return nil, err
	}
	defer st.close()
	var out []*socketResult
	for _, c := range socketCases {
		cpus := strconv.Itoa(m.cfg.serverCPU)
		if c.procs > 1 {
			cpus = allCPUs(c.procs)
		}
		r := &socketResult{Procs: c.procs, Sockets: c.sockets, CPUs: cpus, Rate: saturation / 2}
		logf("GOMAXPROCS %d, %d sockets, CPUs %s", c.procs, c.sockets, cpus)
		s, err := m.start(ctx, withSockets(serverConfigs(m.cfg.Root)[keyOurs], c.sockets),
			fmt.Sprintf("sockets-%d-%d", c.procs, c.sockets), st, c.procs, cpus)
		if err != nil {
			return nil, err
		}
		if err := m.fixedLoad(ctx, s, r); err != nil {
			stopServer(s)
			return nil, err
		}
		r.Saturation, _, err = m.ramp(ctx, s, saturation/2)
		stopServer(s)
		if err != nil {
			return nil, err
		}
		logf("  saturation %d q/s, %.1f µs/query at %d q/s", r.Saturation, r.CPUPerQuery, r.Rate)
		out = append(out, r)
	}
	return out, nil
}

// fixedLoad measures the server's CPU per answered query at r.Rate.
func (m *measurer) fixedLoad(ctx context.Context, s *server, r *socketResult) error {
	cpu0, err := procstat.CPUSeconds(s.pid())
	if err != nil {
		return err
	}
	l, err := runLoad(ctx, m.spec(s, r.Rate, m.cfg.duration))
	if err != nil {
		return err
	}
	cpu1, err := procstat.CPUSeconds(s.pid())
	if err != nil {
		return err
	}
	answered := l.Answered[kindCluster] + l.Answered[kindExternal]
	r.CPUPerQuery = (cpu1 - cpu0) / float64(max(answered, 1)) * 1e6
	r.P99 = l.latency.quantile(0.99)
	r.Answered = float64(answered) / float64(max(l.Offered, 1))
	return nil
}

// withSockets is the configuration with n listening sockets: its own
// multisocket line (deploy/base has one) replaced by multisocket n, or by
// none for 1.
func withSockets(sc serverConfig, n int) serverConfig {
	inner := sc.corefile
	sc.corefile = func(p ports, kc, up string) (string, error) {
		text, err := inner(p, kc, up)
		if err != nil || n <= 1 {
			return dropBlock(text, "multisocket"), err
		}
		bind := regexp.MustCompile(`(?m)^(\s*)bind 127\.0\.0\.1$`)
		return bind.ReplaceAllString(dropBlock(text, "multisocket"), "${1}bind 127.0.0.1\n${1}multisocket "+strconv.Itoa(n)), nil
	}
	sc.Key = fmt.Sprintf("%s-multisocket-%d", sc.Key, n)
	return sc
}

// allCPUs is CPUs 0 to n-1 as taskset's list.
func allCPUs(n int) string { return fmt.Sprintf("0-%d", n-1) }
