package dnszone

// updateService replaces a service's facts the way the builders do.
func updateService(e *Edit, f *Facts) {
	e.UpdatePTRs(e.Service(f.key), f)
	e.Put(f)
}
