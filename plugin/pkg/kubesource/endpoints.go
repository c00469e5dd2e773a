package kubesource

import (
	"cmp"
	"net/netip"
	"slices"
)

// EndpointAddr is one served address of a service, after merging slices.
type EndpointAddr struct {
	Addr     netip.Addr
	Hostname string
	PodName  string
	// Cluster is the source cluster (MCS slices only).
	Cluster string
	// Slice is the name of the slice the address came from.
	Slice string
	// Zone is the endpoint's topology zone ("" when the slice gives none).
	Zone string
}

// ServedEndpoints merges the slices of one service into the addresses DNS
// serves: an endpoint is served when it is ready (or publishNotReady is
// set) and not terminating. An address that appears more than once (two
// slices during a migration, or two clusters claiming it) is served once,
// from the first slice in (cluster, slice name) order; dup, when not nil,
// is called for each duplicate dropped. The result is sorted by address.
func ServedEndpoints(slices_ []*EndpointSlice, publishNotReady bool, dup func(kept, dropped EndpointAddr)) []EndpointAddr {
	ordered := slices_
	if len(slices_) > 1 {
		ordered = slices.Clone(slices_)
		slices.SortFunc(ordered, func(a, b *EndpointSlice) int {
			return cmp.Or(cmp.Compare(a.SourceCluster, b.SourceCluster), cmp.Compare(a.Name(), b.Name()))
		})
	}
	n := 0
	for _, s := range ordered {
		n += len(s.Endpoints)
	}
	out := make([]EndpointAddr, 0, n)
	for _, s := range ordered {
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if e.Terminating || !(e.Ready || publishNotReady) {
				continue
			}
			for _, a := range e.Addresses {
				out = append(out, EndpointAddr{Addr: a, Hostname: e.Hostname, PodName: e.PodName, Cluster: s.SourceCluster, Slice: s.Name(), Zone: s.Zone(e)})
			}
		}
	}
	// Sorted by address, stably: of equal addresses the first is the one
	// in (cluster, slice name) order, which is kept. A sort, where a map
	// of the addresses seen cost more than the rest of the merge.
	slices.SortStableFunc(out, func(a, b EndpointAddr) int { return a.Addr.Compare(b.Addr) })
	kept := 0
	for i := range out {
		if i > 0 && out[i].Addr == out[kept-1].Addr {
			if dup != nil {
				dup(out[kept-1], out[i])
			}
			continue
		}
		out[kept] = out[i]
		kept++
	}
	if kept == 0 {
		return nil
	}
	return out[:kept]
}
