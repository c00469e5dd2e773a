package multicluster

import (
	"net/netip"
	"slices"

	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

// localAddrs are the addresses this cluster names itself: the cluster IPs
// of its Services and the endpoint addresses of its own EndpointSlices
// (served or not). An imported address among them gets no PTR record
// here. The builder keeps this from its events instead of asking the cache
// for an index of slices by address: that index (a string key and a set
// per address) cost a kubeschema-only process ~30 MB at 100k endpoints,
// and only this plugin needs it. Owned by the builder's goroutine.
type localAddrs struct {
	// byService are the addresses of each local service,
	// sorted and unique, as last read: what a change takes back.
	byService map[kubesource.Key][]netip.Addr
	// claims counts the services that name each address.
	claims map[netip.Addr]int32
}

func newLocalAddrs() localAddrs {
	return localAddrs{byService: map[kubesource.Key][]netip.Addr{}, claims: map[netip.Addr]int32{}}
}

// claimed tells whether a local service names ip.
func (l *localAddrs) claimed(ip netip.Addr) bool { return l.claims[ip] > 0 }

// load reads every local service and slice; a slice whose service does not
// exist (yet) still names its addresses, as it did in the cache's index.
func (l *localAddrs) load(c cacheReader) {
	all := map[kubesource.Key][]netip.Addr{}
	for _, svc := range c.Services() {
		key := kubesource.Key{Namespace: svc.Namespace(), Name: svc.Name()}
		all[key] = append(all[key], svc.ClusterIPs...)
	}
	for _, s := range c.EndpointSlices() {
		if isLocal(s) {
			key := kubesource.Key{Namespace: s.Namespace(), Name: s.Service}
			all[key] = appendEndpointAddrs(all[key], s)
		}
	}
	for key, addrs := range all {
		l.set(key, addrs)
	}
}

// reread looks at the local service key again and returns the addresses
// it took or gave up.
func (l *localAddrs) reread(c cacheReader, key kubesource.Key) []netip.Addr {
	var addrs []netip.Addr
	if svc := c.Service(key.Namespace, key.Name); svc != nil {
		addrs = append(addrs, svc.ClusterIPs...)
	}
	for _, s := range c.SlicesForService(key.Namespace, key.Name) {
		if isLocal(s) {
			addrs = appendEndpointAddrs(addrs, s)
		}
	}
	return l.set(key, addrs)
}

// set makes addrs the addresses of key and returns those that changed.
func (l *localAddrs) set(key kubesource.Key, addrs []netip.Addr) []netip.Addr {
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Clip(slices.Compact(addrs))
	before := l.byService[key]
	if len(addrs) == 0 {
		delete(l.byService, key)
	} else {
		l.byService[key] = addrs
	}
	gone, came := sortedDiff(before, addrs)
	for _, ip := range gone {
		if l.claims[ip]--; l.claims[ip] <= 0 {
			delete(l.claims, ip)
		}
	}
	for _, ip := range came {
		l.claims[ip]++
	}
	return append(gone, came...)
}

// sortedDiff returns what is only in a and what is only in b, both sorted.
func sortedDiff(a, b []netip.Addr) (onlyA, onlyB []netip.Addr) {
	for len(a) > 0 && len(b) > 0 {
		switch c := a[0].Compare(b[0]); {
		case c < 0:
			onlyA, a = append(onlyA, a[0]), a[1:]
		case c > 0:
			onlyB, b = append(onlyB, b[0]), b[1:]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return append(onlyA, a...), append(onlyB, b...)
}

func appendEndpointAddrs(out []netip.Addr, s *kubesource.EndpointSlice) []netip.Addr {
	for _, e := range s.Endpoints {
		out = append(out, e.Addresses...)
	}
	return out
}

// isLocal tells a slice of a Service of this cluster from an imported one.
func isLocal(s *kubesource.EndpointSlice) bool {
	return s.Service != "" && s.MultiClusterService == ""
}
