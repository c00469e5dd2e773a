package clusterfirst

// Ready implements ready.Readiness: ready once the sampler runs.
func (cf *Clusterfirst) Ready() bool { return cf.sampler.running.Load() }
