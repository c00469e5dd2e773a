package test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// stubResolver is a Go model of glibc's stub resolver as getaddrinfo uses
// it (res_search in resolv/res_query.c): with fewer dots than ndots the
// name goes through the search list first and is tried as it is last; each
// candidate is asked for every address type at once (A and AAAA in
// parallel, as glibc does by default); NXDOMAIN, NODATA and SERVFAIL go on
// to the next candidate, any other error ends the search; the first
// candidate with an address record wins. TestAutopathGlibc checks that it
// sends exactly the queries the real glibc sends, so the benchmark's
// figures are the client's.
type stubResolver struct {
	server string // host:port
	search []string
	ndots  int
	// noTLDQuery is resolv.conf's no-tld-query: a name without dots is
	// never tried as it is.
	noTLDQuery bool
	qtypes     []uint16
	client     *dns.Client
}

func newStubResolver(server string, search []string, qtypes ...uint16) *stubResolver {
	if len(qtypes) == 0 {
		qtypes = []uint16{dns.TypeA, dns.TypeAAAA}
	}
	return &stubResolver{server: server, search: search, ndots: 5, qtypes: qtypes,
		client: &dns.Client{Timeout: 3 * time.Second}}
}

// lookup resolves name and reports whether it was found and how many
// queries it took.
func (s *stubResolver) lookup(name string) (found bool, queries int, err error) {
	dots := strings.Count(name, ".")
	triedAsIs := false
	try := func(fqdn string) (bool, bool, error) {
		ok, stop, n, err := s.query(fqdn)
		queries += n
		return ok, stop, err
	}
	if dots >= s.ndots {
		if ok, _, err := try(name + "."); ok || err != nil {
			return ok, queries, err
		}
		triedAsIs = true
	}
	searched := false
	for _, d := range s.search {
		searched = true
		ok, stop, err := try(name + "." + d + ".")
		if ok || err != nil {
			return ok, queries, err
		}
		if stop {
			break
		}
	}
	if !triedAsIs && (dots > 0 || !searched || !s.noTLDQuery) {
		ok, _, err := try(name + ".")
		return ok, queries, err
	}
	return false, queries, nil
}

// query asks for every address type of fqdn at once: found when an answer
// holds an address record, stop when a reply ends the search.
func (s *stubResolver) query(fqdn string) (found, stop bool, n int, err error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, t := range s.qtypes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := new(dns.Msg)
			m.SetQuestion(fqdn, t)
			r, _, err := s.client.Exchange(m, s.server)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", fqdn, dns.TypeToString[t], err))
				return
			}
			for _, rr := range r.Answer {
				if rr.Header().Rrtype == t {
					found = true
				}
			}
			switch r.Rcode {
			case dns.RcodeSuccess, dns.RcodeNameError, dns.RcodeServerFailure:
			default:
				stop = true
			}
		}()
	}
	wg.Wait()
	return found, stop, len(s.qtypes), errors.Join(errs...)
}

// The two ways a pod's resolv.conf can search.
var (
	// apClassicSearch is a ClusterFirst pod's: three cluster domains and
	// the host's.
	apClassicSearch = append([]string{apNamespace + ".svc." + apCluster, "svc." + apCluster, apCluster}, strings.Fields(apHostSearch)...)
	// apAutopathSearch is an autopath pod's one search domain.
	apAutopathSearch = []string{"search." + apNamespace + "." + apCluster + "." + apSuffix}
)

// BenchmarkLookup measures what a pod sees for one getaddrinfo lookup,
// classic search path against autopath, through the node-local cache or
// straight to the cluster DNS (which has its cache, as in a cluster), with
// warm caches: queries the client sends per lookup (queries/lookup) and the
// time a lookup takes (ns/op, also as µs/lookup).
//
//	go test ./test/ -run '^$' -bench BenchmarkLookup -benchtime 2000x
func BenchmarkLookup(b *testing.B) {
	e := newApEnv(b, apOptions{clusterCache: true})
	modes := []struct {
		name, server string
		search       []string
	}{
		{"classic/nodelocal", e.node, apClassicSearch},
		{"autopath/nodelocal", e.node, apAutopathSearch},
		{"classic/direct", e.cluster, apClassicSearch},
		{"autopath/direct", e.cluster, apAutopathSearch},
	}
	lookups := []struct{ label, name string }{
		{"short", apShortSvc},
		{"svc.ns", apOtherSvc + "." + apOtherNS},
		{"external", apExternal},
		{"missing", apMissing},
	}
	for _, mode := range modes {
		for _, l := range lookups {
			b.Run(mode.name+"/"+l.label, func(b *testing.B) {
				r := newStubResolver(mode.server+":53", mode.search)
				if _, _, err := r.lookup(l.name); err != nil { // warm the caches
					b.Fatal(err)
				}
				queries := 0
				start := time.Now()
				for b.Loop() {
					found, n, err := r.lookup(l.name)
					if err != nil || found == (l.name == apMissing) {
						b.Fatalf("%s: found %v, %v", l.name, found, err)
					}
					queries += n
				}
				b.ReportMetric(float64(queries)/float64(b.N), "queries/lookup")
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/lookup")
			})
		}
	}
}
