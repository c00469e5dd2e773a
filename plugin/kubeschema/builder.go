package kubeschema

import (
	"cmp"
	"math"
	"net/netip"
	"time"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	"k8s.io/apimachinery/pkg/labels"
)

// cacheReader is what the builder and the query path read of the cache;
// *kubesource.Handle implements it.
type cacheReader interface {
	Services() []*kubesource.Service
	Service(ns, name string) *kubesource.Service
	SlicesForService(ns, name string) []*kubesource.EndpointSlice
	Namespace(name string) *kubesource.Namespace
	PodsByIP(a netip.Addr) []*kubesource.Pod
	ServiceCIDRs() []*kubesource.ServiceCIDR
}

// builder turns cache events into new snapshots. Events only mark services
// dirty; one goroutine rebuilds what is dirty and publishes, so a burst of
// changes costs one swap, and the query path never waits.
type builder struct {
	k     *Kubeschema
	cache cacheReader

	// marks are the services, namespaces and ranges changed since the
	// last build.
	marks kubesource.Tracker

	// pending is the first snapshot while Prepare builds it; owned by the
	// goroutine that runs the builder.
	pending *dnszone.Edit
}

func newBuilder(k *Kubeschema, h cacheReader) *builder {
	return &builder{k: k, cache: h}
}

// Mark records a cache event (kubesource.Builder): quick, never blocks.
func (b *builder) Mark(ev kubesource.Event) bool {
	switch ev.Resource {
	case kubesource.Services, kubesource.EndpointSlices:
		if ev.Service == "" {
			return false // a slice without a service-name label belongs to no service
		}
		b.marks.Mark(kubesource.Key{Namespace: ev.Namespace, Name: ev.Service}, ev.Changed)
	case kubesource.Namespaces:
		if b.k.opts.namespaceLabels == nil {
			return false
		}
		b.marks.MarkNamespace(ev.Namespace)
	case kubesource.ServiceCIDRs:
		b.marks.MarkRanges()
	default:
		return false
	}
	return true
}

// Prepare applies what was marked to the first snapshot while the cache
// syncs (changes.Preparer). Nobody reads that snapshot yet, so it is
// changed in place, without the copies a published one needs. The ranges
// are left to Publish, which publishes them whatever was marked.
func (b *builder) Prepare() {
	if b.pending == nil {
		b.pending = dnszone.NewEdit(0)
	}
	marks := b.marks.Take()
	b.apply(b.pending, &marks)
}

// Publish publishes the first snapshot once the cache has synced
// (changes.Builder): the one Prepare built, with the last changes
// applied, or else a full build.
func (b *builder) Publish() {
	b.k.publishRanges(b.cache)
	if b.pending == nil {
		b.marks.Take() // covered by the full build
		b.k.Publish(b.fullBuild())
		return
	}
	b.Prepare()
	e := b.pending
	b.pending = nil
	e.SetSerial(changes.NextSerial(0))
	b.k.Publish(e.Done())
}

// fullBuild computes a snapshot from everything in the cache.
func (b *builder) fullBuild() *dnszone.Snapshot {
	e := dnszone.NewEdit(changes.NextSerial(0))
	for _, svc := range b.cache.Services() {
		b.put(e, svc.Namespace(), svc)
	}
	return e.Done()
}

// Apply rebuilds the marked services into a new snapshot and publishes it.
func (b *builder) Apply() {
	marks := b.marks.Take()
	if marks.Ranges {
		b.k.publishRanges(b.cache)
	}
	if len(marks.Keys) == 0 && len(marks.Namespaces) == 0 {
		return
	}
	old := b.k.Snapshot()
	e := old.Edit(changes.NextSerial(old.Serial()))
	if !b.apply(e, &marks) {
		return // namespaces changed that have no service
	}
	b.k.Publish(e.Done())
	for key, changed := range marks.Keys {
		kind := kubesource.HeadlessWithoutSelector
		if svc := b.cache.Service(key.Namespace, key.Name); svc != nil {
			kind = svc.Kind
		}
		metrics.ObserveProgrammed(string(kind), changed)
	}
}

// apply rebuilds the marked services, and every service of a namespace
// whose labels changed (added to marks.Keys), in e; false when there was
// nothing to rebuild.
func (b *builder) apply(e *dnszone.Edit, marks *kubesource.Set) bool {
	if len(marks.Namespaces) > 0 {
		now := time.Now()
		for _, svc := range b.cache.Services() {
			if marks.Namespaces[svc.Namespace()] {
				marks.Add(kubesource.Key{Namespace: svc.Namespace(), Name: svc.Name()}, now)
			}
		}
	}
	for key := range marks.Keys {
		b.rebuild(e, key)
	}
	return len(marks.Keys) > 0
}

// rebuild replaces the facts of the service of key in e with what the
// cache says now, and changes the PTR entries of the addresses that came
// or went.
func (b *builder) rebuild(e *dnszone.Edit, key kubesource.Key) {
	prev := e.Service(key.Labels())
	next := b.facts(key.Namespace, b.cache.Service(key.Namespace, key.Name))
	e.UpdatePTRs(prev, next)
	switch {
	case next != nil:
		e.Put(next)
	case prev != nil:
		e.Remove(key.Labels())
	}
}

// put adds svc's facts and PTR entries, if it is served and has a name.
func (b *builder) put(e *dnszone.Edit, ns string, svc *kubesource.Service) {
	if facts := b.facts(ns, svc); facts != nil {
		e.Put(facts)
		e.AddPTRs(facts)
	}
}

// facts are svc's facts; nil when it is not served or has no name.
func (b *builder) facts(ns string, svc *kubesource.Service) *dnszone.Facts {
	if svc == nil || !b.k.serves(b.cache, ns) {
		return nil
	}
	return serviceFacts(b.input(svc), &b.k.opts)
}

// buildInput is one service with its served endpoints.
type buildInput struct {
	svc       *kubesource.Service
	endpoints []kubesource.EndpointAddr
	// slices are the service's slices, whose ports are the endpoints': for
	// a headless service clients connect to these, not to the service
	// port.
	slices []*kubesource.EndpointSlice
}

// input gathers a service's served endpoints from its slices.
func (b *builder) input(svc *kubesource.Service) buildInput {
	in := buildInput{svc: svc}
	if svc.Kind == kubesource.ExternalName || b.k.opts.noEndpoints {
		return in
	}
	if svc.Kind == kubesource.ClusterIP && !b.k.opts.ignoreEmptyService {
		return in
	}
	slices := b.cache.SlicesForService(svc.Namespace(), svc.Name())
	in.endpoints = kubesource.ServedEndpoints(slices, svc.PublishNotReady, nil)
	if svc.Kind == kubesource.ClusterIP {
		return in // only whether any endpoint is ready matters
	}
	in.slices = slices
	return in
}

// serviceFacts computes the facts of in; nil when the service has no
// name in DNS.
func serviceFacts(in buildInput, o *options) *dnszone.Facts {
	svc := in.svc
	key := svc.Name() + "." + svc.Namespace()
	switch svc.Kind {
	case kubesource.ExternalName:
		if svc.ExternalName == "" {
			return nil
		}
		return dnszone.NewAlias(key, dns.Fqdn(svc.ExternalName))
	case kubesource.ClusterIP:
		if o.ignoreEmptyService && len(in.endpoints) == 0 {
			return nil
		}
		return dnszone.NewVirtual(key, svc.ClusterIPs, ports(svc.Ports, nil))
	}
	if len(in.endpoints) == 0 && !o.zonal {
		// Headless without ready endpoints: NXDOMAIN (schema 1.0.1). With
		// zonal it is kept, empty, for its zonal names: NODATA, as stock.
		return nil
	}
	eps := make([]dnszone.EndpointFacts, 0, len(in.endpoints))
	var zones zoneGroups
	for _, ep := range in.endpoints {
		// The dashed address is not kept: derived again when needed.
		host := explicitHostname(ep, o.endpointPodNames)
		named := dnsname.DashedIsLabel(ep.Addr)
		if host != "" {
			named = dnsname.IsLabel(host)
		}
		if !named {
			log.Warningf("endpoint %s of %s: hostname %q is not a DNS label, skipped", ep.Addr, key, cmp.Or(host, dnsname.Dashed(ep.Addr)))
		}
		group := uint8(0)
		if o.zonal {
			group = zones.of(ep.Zone)
		}
		eps = append(eps, dnszone.NewEndpoint(ep.Addr, host, group, named))
	}
	return dnszone.NewHeadless(key, eps, ports(svc.Ports, in.slices), zones.groups)
}

// zoneGroups are a headless service's endpoint groups by topology zone,
// for zonal names: group 0 has no zone.
type zoneGroups struct {
	groups []dnszone.Group
}

// of is the group of zone, added if new. Past 255 zones in one service
// (no cluster has that many) an endpoint joins group 0, and no zonal name
// selects it.
func (z *zoneGroups) of(zone string) uint8 {
	if zone == "" {
		return 0
	}
	if z.groups == nil {
		z.groups = []dnszone.Group{{}}
	}
	for i := range z.groups {
		if z.groups[i].Zone == zone {
			return uint8(i)
		}
	}
	if len(z.groups) > math.MaxUint8 {
		return 0
	}
	z.groups = append(z.groups, dnszone.Group{Zone: zone})
	return uint8(len(z.groups) - 1)
}

// ports are a service's ports for SRV records; a headless service's
// clients connect to its endpoints' port numbers (slicePorts) when the
// slices have them.
func ports(ps []kubesource.Port, slices []*kubesource.EndpointSlice) []dnszone.SRVPort {
	out := make([]dnszone.SRVPort, 0, len(ps))
	for _, p := range ps {
		number := p.Port
		if n, ok := slicePort(slices, p); ok {
			number = n
		}
		out = append(out, dnszone.SRVPort{Name: p.Name, Proto: p.Protocol, Number: uint16(number)})
	}
	return out
}

// slicePort is the number of the first port of slices with p's name and
// protocol. A scan: services have a few ports, and a map per build cost
// more than the search.
func slicePort(slices []*kubesource.EndpointSlice, p kubesource.Port) (int32, bool) {
	for _, s := range slices {
		for _, sp := range s.Ports {
			if sp.Name == p.Name && sp.Protocol == p.Protocol {
				return sp.Port, true
			}
		}
	}
	return 0, false
}

// explicitHostname is the schema's hostname of an endpoint when the API
// gives one: its hostname field, else (endpoint_pod_names) its pod's name;
// "" when it is named by its dashed address.
func explicitHostname(ep kubesource.EndpointAddr, podNames bool) string {
	if ep.Hostname == "" && podNames {
		return ep.PodName
	}
	return ep.Hostname
}

// serves tells whether services of namespace ns are visible: the
// namespaces option and the namespace_labels selector both filter.
func (k *Kubeschema) serves(c cacheReader, ns string) bool {
	if len(k.opts.namespaces) > 0 && !k.opts.namespaces[ns] {
		return false
	}
	if k.opts.namespaceLabels == nil {
		return true
	}
	n := c.Namespace(ns)
	return n != nil && k.opts.namespaceLabels.Matches(labels.Set(n.Labels))
}
