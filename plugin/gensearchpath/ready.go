package gensearchpath

// Ready implements ready.Readiness: ready while at least one cluster DNS
// upstream is not marked down by the health checks.
func (g *Gensearchpath) Ready() bool {
	for _, p := range g.proxies {
		if !p.Down(g.maxfails) {
			return true
		}
	}
	return false
}
