package mesosschema

// Ready implements ready.Readiness: ready once the first state from a
// master is served.
func (m *Mesosschema) Ready() bool { return m.Server.Ready() }
