package kubeschema

// Ready implements ready.Readiness: ready once the first snapshot from a
// synced cache is being served.
func (k *Kubeschema) Ready() bool { return k.Server.Ready() }
