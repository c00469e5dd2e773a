package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// query is one line of a dnsperf data file.
type query struct {
	kind  string
	name  string
	qtype uint16
	// expect is what a Kubernetes plugin answers: answer, nodata or
	// nxdomain (the in-process benchmark checks it before timing).
	expect string
	tcp    bool // asked over TCP (the in-process benchmark's writer says so)
}

// share is one kind of query and its weight in a mix (percent).
type share struct {
	kind   string
	weight int
	make   func(r *rand.Rand) query
}

// externalNames are what pods resolve outside the cluster; with ndots:5
// each goes through the search path first and misses.
var externalNames = []string{"google.com", "api.github.com", "s3.amazonaws.com", "registry-1.docker.io"}

// mixLines is the length of a mix file; dnsperf loops over it.
const mixLines = 10000

// clusterMix is the query mix of a real cluster, for cluster.local, on
// the fixture's services.
func (f *fixture) clusterMix() []share {
	cips := sortedRefs(f.clusterIPs)
	return clusterMix(cips, cips, sortedRefs(f.headless))
}

// clusterMix is the query mix of a real cluster on the services given:
// ClusterIP ones (with their IPv4 address), those of them with no IPv6
// address (asked AAAA), and headless ones with endpoints.
func clusterMix(cips, v4only, hls []svcRef) []share {
	pick := func(r *rand.Rand, refs []svcRef) svcRef { return refs[r.IntN(len(refs))] }
	svcName := func(s svcRef) string { return s.name + "." + s.ns + ".svc.cluster.local." }
	return []share{
		{"ClusterIP A", 30, func(r *rand.Rand) query {
			return query{name: svcName(pick(r, cips)), qtype: dns.TypeA, expect: "answer"}
		}},
		{"AAAA NODATA", 15, func(r *rand.Rand) query {
			return query{name: svcName(pick(r, v4only)), qtype: dns.TypeAAAA, expect: "nodata"}
		}},
		{"headless A", 15, func(r *rand.Rand) query {
			return query{name: svcName(pick(r, hls)), qtype: dns.TypeA, expect: "answer"}
		}},
		{"SRV", 10, func(r *rand.Rand) query {
			return query{name: "_http._tcp." + svcName(pick(r, cips)), qtype: dns.TypeSRV, expect: "answer"}
		}},
		{"PTR", 10, func(r *rand.Rand) query {
			rev, _ := dns.ReverseAddr(pick(r, cips).ip)
			return query{name: rev, qtype: dns.TypePTR, expect: "answer"}
		}},
		{"search-path NXDOMAIN", 20, func(r *rand.Rand) query {
			return query{name: searchMiss(r, pick(r, cips).ns, "cluster.local."), qtype: dns.TypeA, expect: "nxdomain"}
		}},
	}
}

// searchMiss is one of the search-path expansions of an external name
// asked from a pod in ns: <name>.<ns>.svc.<zone>, <name>.svc.<zone> or
// <name>.<zone>.
func searchMiss(r *rand.Rand, ns, zone string) string {
	ext := externalNames[r.IntN(len(externalNames))]
	switch r.IntN(3) {
	case 0:
		return ext + "." + ns + ".svc." + zone
	case 1:
		return ext + ".svc." + zone
	}
	return ext + "." + zone
}

// multiclusterMix is the same shape of mix for clusterset.local.
func (f *fixture) multiclusterMix() []share {
	var ips, hls []svcRef
	for _, s := range sortedRefs(f.imports) {
		if s.ip == "" {
			hls = append(hls, s)
		} else {
			ips = append(ips, s)
		}
	}
	pick := func(r *rand.Rand, refs []svcRef) svcRef { return refs[r.IntN(len(refs))] }
	name := func(s svcRef) string { return s.name + "." + s.ns + ".svc.clusterset.local." }
	return []share{
		{"ClusterSetIP A", 40, func(r *rand.Rand) query { return query{name: name(pick(r, ips)), qtype: dns.TypeA, expect: "answer"} }},
		{"AAAA NODATA", 15, func(r *rand.Rand) query {
			return query{name: name(pick(r, ips)), qtype: dns.TypeAAAA, expect: "nodata"}
		}},
		{"headless A", 15, func(r *rand.Rand) query { return query{name: name(pick(r, hls)), qtype: dns.TypeA, expect: "answer"} }},
		{"SRV", 10, func(r *rand.Rand) query {
			return query{name: "_http._tcp." + name(pick(r, ips)), qtype: dns.TypeSRV, expect: "answer"}
		}},
		{"search-path NXDOMAIN", 20, func(r *rand.Rand) query {
			return query{name: searchMiss(r, pick(r, ips).ns, "clusterset.local."), qtype: dns.TypeA, expect: "nxdomain"}
		}},
	}
}

// sortedRefs lists refs by number, so a seeded mix is the same every run.
func sortedRefs(m map[int]svcRef) []svcRef {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]svcRef, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// generate draws n queries from a mix with a fixed seed.
func generate(mix []share, n int) []query {
	r := rand.New(rand.NewPCG(1, 2))
	total := 0
	for _, s := range mix {
		total += s.weight
	}
	out := make([]query, n)
	for i := range out {
		w := r.IntN(total)
		for _, s := range mix {
			if w < s.weight {
				out[i] = s.make(r)
				out[i].kind = s.kind
				break
			}
			w -= s.weight
		}
	}
	return out
}

// samples is one query of each kind of a mix, for the in-process benchmark.
func samples(mix []share) []query {
	r := rand.New(rand.NewPCG(3, 4))
	out := make([]query, len(mix))
	for i, s := range mix {
		out[i] = s.make(r)
		out[i].kind = s.kind
	}
	return out
}

// writeQueries writes a dnsperf data file: "name TYPE" per line.
func writeQueries(path string, qs []query) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, q := range qs {
		fmt.Fprintf(w, "%s %s\n", q.name, dns.TypeToString[q.qtype])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeCases writes the in-process benchmark's cases:
// "kind|name|TYPE|expect|udp or tcp".
func writeCases(path string, qs []query) error {
	var b strings.Builder
	for _, q := range qs {
		proto := "udp"
		if q.tcp {
			proto = "tcp"
		}
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s\n", q.kind, q.name, dns.TypeToString[q.qtype], q.expect, proto)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// mixDescription is "30% ClusterIP A, 15% AAAA NODATA, ..." for the report.
func mixDescription(mix []share) string {
	parts := make([]string, len(mix))
	for i, s := range mix {
		parts[i] = fmt.Sprintf("%d%% %s", s.weight, s.kind)
	}
	return strings.Join(parts, ", ")
}
