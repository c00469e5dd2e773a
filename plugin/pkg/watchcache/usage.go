package watchcache

import "sort"

// Usage describes one live cache: what tests and diagnostics need to see
// that plugins share one connection and one watch per resource.
type Usage struct {
	Config Config
	// Handles is how many Handles hold the cache.
	Handles int
	// Watches maps each watched resource ("services", ...) to the number
	// of Handles that use its one informer.
	Watches map[string]int
}

// InUse lists the live caches, in a stable order.
func InUse() []Usage {
	registry.Lock()
	defer registry.Unlock()
	keys := make([]string, 0, len(registry.caches))
	for k := range registry.caches {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Usage, 0, len(keys))
	for _, k := range keys {
		c := registry.caches[k]
		u := Usage{Config: c.cfg, Handles: c.refs, Watches: map[string]int{}}
		c.mu.RLock()
		for kind, inf := range c.informers {
			u.Watches[resourceNames[kind]] = inf.refs
		}
		c.mu.RUnlock()
		out = append(out, u)
	}
	return out
}
