// Package querymix draws the query mixes the servers are measured with:
// kinds of query and their weights, drawn with a fixed seed into a dnsperf
// data file, and one query of each kind for the in-process benchmark.
package querymix

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Query is one line of a dnsperf data file.
type Query struct {
	Kind  string
	Name  string
	Qtype uint16
	// Expect is what a Kubernetes plugin answers: answer, nodata or
	// nxdomain (the in-process benchmark checks it before timing).
	Expect string
	TCP    bool // asked over TCP (the in-process benchmark's writer says so)
}

// Share is one kind of query and its weight in a mix (percent).
type Share struct {
	Kind   string
	Weight int
	Make   func(r *rand.Rand) Query
}

// ExternalNames are what pods resolve outside the cluster; with ndots:5
// each goes through the search path first and misses.
var ExternalNames = []string{"google.com", "api.github.com", "s3.amazonaws.com", "registry-1.docker.io"}

// Lines is the length of a mix file; dnsperf loops over it.
const Lines = 10000

// Cluster is the query mix of a real cluster on the services given:
// ClusterIP ones (with their IPv4 address), those of them with no IPv6
// address (asked AAAA), and headless ones with endpoints.
func Cluster(cips, v4only, hls []Service) []Share {
	pick := func(r *rand.Rand, refs []Service) Service { return refs[r.IntN(len(refs))] }
	svcName := func(s Service) string { return s.Name + "." + s.NS + ".svc.cluster.local." }
	return []Share{
		{"ClusterIP A", 30, func(r *rand.Rand) Query {
			return Query{Name: svcName(pick(r, cips)), Qtype: dns.TypeA, Expect: "answer"}
		}},
		{"AAAA NODATA", 15, func(r *rand.Rand) Query {
			return Query{Name: svcName(pick(r, v4only)), Qtype: dns.TypeAAAA, Expect: "nodata"}
		}},
		{"headless A", 15, func(r *rand.Rand) Query {
			return Query{Name: svcName(pick(r, hls)), Qtype: dns.TypeA, Expect: "answer"}
		}},
		{"SRV", 10, func(r *rand.Rand) Query {
			return Query{Name: "_http._tcp." + svcName(pick(r, cips)), Qtype: dns.TypeSRV, Expect: "answer"}
		}},
		{"PTR", 10, func(r *rand.Rand) Query {
			rev, _ := dns.ReverseAddr(pick(r, cips).IP)
			return Query{Name: rev, Qtype: dns.TypePTR, Expect: "answer"}
		}},
		{"search-path NXDOMAIN", 20, func(r *rand.Rand) Query {
			return Query{Name: searchMiss(r, pick(r, cips).NS, "cluster.local."), Qtype: dns.TypeA, Expect: "nxdomain"}
		}},
	}
}

// searchMiss is one of the search-path expansions of an external name
// asked from a pod in ns: <name>.<ns>.svc.<zone>, <name>.svc.<zone> or
// <name>.<zone>.
func searchMiss(r *rand.Rand, ns, zone string) string {
	ext := ExternalNames[r.IntN(len(ExternalNames))]
	switch r.IntN(3) {
	case 0:
		return ext + "." + ns + ".svc." + zone
	case 1:
		return ext + ".svc." + zone
	}
	return ext + "." + zone
}

// Multicluster is the same shape of mix for clusterset.local, on the
// ServiceImports given (by number).
func Multicluster(imports []Service) []Share {
	var ips, hls []Service
	for _, s := range imports {
		if s.IP == "" {
			hls = append(hls, s)
		} else {
			ips = append(ips, s)
		}
	}
	pick := func(r *rand.Rand, refs []Service) Service { return refs[r.IntN(len(refs))] }
	name := func(s Service) string { return s.Name + "." + s.NS + ".svc.clusterset.local." }
	return []Share{
		{"ClusterSetIP A", 40, func(r *rand.Rand) Query { return Query{Name: name(pick(r, ips)), Qtype: dns.TypeA, Expect: "answer"} }},
		{"AAAA NODATA", 15, func(r *rand.Rand) Query {
			return Query{Name: name(pick(r, ips)), Qtype: dns.TypeAAAA, Expect: "nodata"}
		}},
		{"headless A", 15, func(r *rand.Rand) Query { return Query{Name: name(pick(r, hls)), Qtype: dns.TypeA, Expect: "answer"} }},
		{"SRV", 10, func(r *rand.Rand) Query {
			return Query{Name: "_http._tcp." + name(pick(r, ips)), Qtype: dns.TypeSRV, Expect: "answer"}
		}},
		{"search-path NXDOMAIN", 20, func(r *rand.Rand) Query {
			return Query{Name: searchMiss(r, pick(r, ips).NS, "clusterset.local."), Qtype: dns.TypeA, Expect: "nxdomain"}
		}},
	}
}

// Sorted lists refs by number, so a seeded mix is the same every run.
func Sorted(m map[int]Service) []Service {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Service, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// Generate draws n queries from a mix with a fixed seed.
func Generate(mix []Share, n int) []Query {
	r := rand.New(rand.NewPCG(1, 2))
	total := 0
	for _, s := range mix {
		total += s.Weight
	}
	out := make([]Query, n)
	for i := range out {
		w := r.IntN(total)
		for _, s := range mix {
			if w < s.Weight {
				out[i] = s.Make(r)
				out[i].Kind = s.Kind
				break
			}
			w -= s.Weight
		}
	}
	return out
}

// Samples is one query of each kind of a mix, for the in-process benchmark.
func Samples(mix []Share) []Query {
	r := rand.New(rand.NewPCG(3, 4))
	out := make([]Query, len(mix))
	for i, s := range mix {
		out[i] = s.Make(r)
		out[i].Kind = s.Kind
	}
	return out
}

// WriteQueries writes a dnsperf data file: "name TYPE" per line.
func WriteQueries(path string, qs []Query) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, q := range qs {
		fmt.Fprintf(w, "%s %s\n", q.Name, dns.TypeToString[q.Qtype])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteCases writes the in-process benchmark's cases:
// "kind|name|TYPE|expect|udp or tcp".
func WriteCases(path string, qs []Query) error {
	var b strings.Builder
	for _, q := range qs {
		proto := "udp"
		if q.TCP {
			proto = "tcp"
		}
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s\n", q.Kind, q.Name, dns.TypeToString[q.Qtype], q.Expect, proto)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Describe is "30% ClusterIP A, 15% AAAA NODATA, ..." for the report.
func Describe(mix []Share) string {
	parts := make([]string, len(mix))
	for i, s := range mix {
		parts[i] = fmt.Sprintf("%d%% %s", s.Weight, s.Kind)
	}
	return strings.Join(parts, ", ")
}

// Service names one service and, for ClusterIP services, its address.
type Service struct{ Name, NS, IP string }
