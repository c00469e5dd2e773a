package results

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The forced relist's settings that its figures are read with (the
// report states them; bench's relist.go has the others).
const (
	// RelistSettle is how long after its first complete answer a server
	// runs before its steady figures are read and the outage begins.
	RelistSettle = 10 * time.Second
	// RelistSample is the period of the heap samples.
	RelistSample = 100 * time.Millisecond
)

// RelistResult is one server's forced relist.
type RelistResult struct {
	Revision int64 // etcd compacted to
	// DownSeconds run from the API server's stop to its /readyz ok again,
	// the compaction included.
	DownSeconds float64
	// SteadyRSS and SteadyHeap are VmRSS and go_memstats_heap_inuse_bytes
	// (no forced GC) just before the outage, RelistSettle after the
	// server's first complete answer.
	SteadyRSS, SteadyHeap int64
	// PeakRSS is VmHWM, reset just before the outage, read at the end.
	PeakRSS int64
	// PeakHeap is the largest go_memstats_heap_inuse_bytes of HeapSamples
	// read from the server's /metrics every RelistSample from the outage
	// to the end (a sample the busy server answers late comes late).
	PeakHeap    int64
	HeapSamples int
	// Seconds run from the API server ready to the end of the wait: every
	// resource relisted and the server idle for relistIdle.
	Seconds   float64
	Resources []ResourceRelist
	// AnswersAfter is empty when every probe answered completely after
	// the relist, else what did not.
	AnswersAfter string
}

// ResourceRelist is one resource a server watches, through the relist.
type ResourceRelist struct {
	Resource string
	// Before and After are ours' coredns_watchcache_relists_total of the
	// resource; -1 for stock, which has no such counter.
	Before, After float64
	// Lists are the lists the API server served the server since the
	// outage, from its audit log.
	Lists int
}

// Relisted tells whether the resource was listed again: in the audit log,
// and for ours in its counter too.
func (rr ResourceRelist) Relisted() bool {
	return rr.Lists > 0 && (rr.Before < 0 || rr.After > rr.Before)
}

// AllRelisted tells whether every resource was listed again.
func (r *RelistResult) AllRelisted() bool {
	return len(r.Resources) > 0 && !slices.ContainsFunc(r.Resources, func(rr ResourceRelist) bool { return !rr.Relisted() })
}

// NotRelisted names the resources that were not listed again.
func (r *RelistResult) NotRelisted() []string {
	var out []string
	for _, rr := range r.Resources {
		if !rr.Relisted() {
			out = append(out, rr.Resource)
		}
	}
	return out
}

// RelistText is what relisted: "every resource (services 1, …)" or the
// ones that did not.
func RelistText(res *RelistResult) string {
	var parts []string
	for _, rr := range res.Resources {
		p := fmt.Sprintf("%s %d", rr.Resource, rr.Lists)
		if rr.Before >= 0 {
			p += fmt.Sprintf(" (counter %.0f → %.0f)", rr.Before, rr.After)
		}
		parts = append(parts, p)
	}
	lists := strings.Join(parts, ", ")
	if res.AllRelisted() {
		return "every resource listed again: " + lists
	}
	return fmt.Sprintf("NOT listed again: %s (lists since the outage: %s)", strings.Join(res.NotRelisted(), ", "), lists)
}
