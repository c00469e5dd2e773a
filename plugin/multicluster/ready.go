package multicluster

// Ready implements ready.Readiness: ready once the first snapshot from a
// synced cache is being served.
func (m *Multicluster) Ready() bool { return m.Server.Ready() }
