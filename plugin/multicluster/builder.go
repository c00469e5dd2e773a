package multicluster

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

// cacheReader is what the builder reads of the cache; *kubesource.Handle
// implements it. The local half (Services and their slices) tells which
// addresses this cluster already names.
type cacheReader interface {
	ServiceImports() []*kubesource.ServiceImport
	ServiceImport(ns, name string) *kubesource.ServiceImport
	SlicesForImport(ns, name string) []*kubesource.EndpointSlice
	Services() []*kubesource.Service
	Service(ns, name string) *kubesource.Service
	EndpointSlices() []*kubesource.EndpointSlice
	SlicesForService(ns, name string) []*kubesource.EndpointSlice
}

// builder turns cache events into new snapshots. Events only mark imports
// (and local services) dirty; one goroutine rebuilds what is dirty and
// publishes, so a burst of changes costs one swap, and the query path
// never waits.
type builder struct {
	m     *Multicluster
	cache cacheReader

	// marks are the imports changed since the last build, and the local
	// services whose addresses may have changed: they decide which import
	// addresses get a PTR record.
	marks kubesource.Tracker

	// build serialises the builds: the consumer's goroutine runs Publish
	// and Apply, the ClusterProperty watch setClusterID. What follows is
	// guarded by it.
	build sync.Mutex
	// published is set by Publish: before it, a new cluster ID only needs
	// to be kept.
	published bool
	// clusterID is the local cluster's ID, lower case; "" when unknown.
	clusterID string
	// warnedNoID is set once the log has said that PreferClose is ignored
	// for want of a cluster ID.
	warnedNoID bool
	ptrs       ptrIndex
	// problems are the bad-input lines last logged for each import, so
	// each is logged once while it lasts.
	problems map[kubesource.Key][]string
}

func newBuilder(m *Multicluster, c cacheReader) *builder {
	return &builder{m: m, cache: c, ptrs: newPtrIndex(), problems: map[kubesource.Key][]string{}}
}

// Mark records a cache event (kubesource.Builder): quick, never blocks.
func (b *builder) Mark(ev kubesource.Event) bool {
	switch ev.Resource {
	case kubesource.ServiceImports, kubesource.EndpointSlices, kubesource.Services:
	default:
		return false
	}
	if ev.Import != "" {
		b.marks.Mark(kubesource.Key{Namespace: ev.Namespace, Name: ev.Import}, ev.Changed)
	}
	if ev.Resource != kubesource.ServiceImports && ev.Service != "" {
		b.marks.MarkLocal(kubesource.Key{Namespace: ev.Namespace, Name: ev.Service})
	}
	return true
}

// Publish builds the first snapshot from the synced cache
// (changes.Builder); what was marked before is covered by it.
func (b *builder) Publish() {
	b.build.Lock()
	defer b.build.Unlock()
	b.marks.Take()
	b.m.Publish(b.fullBuild())
	b.published = true
}

// setClusterID takes a new local cluster ID ("" for none) and rebuilds
// the imports it changes the answers of: the headless PreferClose ones.
func (b *builder) setClusterID(id string) {
	b.build.Lock()
	defer b.build.Unlock()
	if id == b.clusterID {
		return
	}
	b.clusterID = id
	if !b.published {
		return
	}
	now := time.Now()
	for _, imp := range b.cache.ServiceImports() {
		if imp.Headless && imp.PreferClose {
			b.marks.Mark(kubesource.Key{Namespace: imp.Namespace(), Name: imp.Name()}, now)
		}
	}
	b.apply()
}

// fullBuild computes a snapshot from everything in the cache.
func (b *builder) fullBuild() *dnszone.Snapshot {
	e := dnszone.NewEdit(changes.NextSerial(0))
	b.ptrs = newPtrIndex()
	b.ptrs.local.load(b.cache)
	for _, imp := range b.cache.ServiceImports() {
		b.put(e, kubesource.Key{Namespace: imp.Namespace(), Name: imp.Name()}, imp)
	}
	for ip := range b.ptrs.candidates {
		if p := b.ptrs.served(ip); p != nil {
			e.AddPTR(ip, p.svc)
		}
	}
	return e.Done()
}

// Apply rebuilds the dirty imports, rechecks the addresses whose PTR
// record may have changed, and publishes a new snapshot if anything did.
func (b *builder) Apply() {
	b.build.Lock()
	defer b.build.Unlock()
	b.apply()
}

func (b *builder) apply() {
	marks := b.marks.Take()
	old := b.m.Snapshot()
	var e *dnszone.Edit
	edit := func() *dnszone.Edit {
		if e == nil {
			e = old.Edit(changes.NextSerial(old.Serial()))
		}
		return e
	}
	affected := map[netip.Addr]bool{}
	for key := range marks.Keys {
		edit().Remove(key.Labels())
		mark(affected, b.ptrs.drop(key))
		mark(affected, b.put(edit(), key, b.cache.ServiceImport(key.Namespace, key.Name)))
	}
	for key := range marks.Local {
		mark(affected, b.ptrs.reclaim(b.cache, key))
	}
	for ip := range affected {
		p := b.ptrs.served(ip)
		svc, ep := old.PTROwner(ip)
		if p != nil && p.svc == svc && p.ep == ep || p == nil && svc == nil {
			continue
		}
		edit().ClearPTR(ip, "")
		if p != nil {
			edit().AddPTR(ip, p.svc)
		}
	}
	if e == nil {
		return // a local change that concerns no import
	}
	b.m.Publish(e.Done())
	for key, changed := range marks.Keys {
		metrics.ObserveProgrammed(string(b.kindOf(old, key)), changed)
	}
}

func mark(set map[netip.Addr]bool, ips []netip.Addr) {
	for _, ip := range ips {
		set[ip] = true
	}
}

// kindOf is the kind of import key; for a deleted import, the kind it had.
func (b *builder) kindOf(old *dnszone.Snapshot, key kubesource.Key) kubesource.ServiceKind {
	if imp := b.cache.ServiceImport(key.Namespace, key.Name); imp != nil {
		return importKind(imp)
	}
	if svc := old.Service(key.Labels()); svc != nil && svc.Kind() == dnszone.Headless {
		return kubesource.MulticlusterHeadless
	}
	return kubesource.ClusterSetIP
}

func importKind(imp *kubesource.ServiceImport) kubesource.ServiceKind {
	if imp.Headless {
		return kubesource.MulticlusterHeadless
	}
	return kubesource.ClusterSetIP
}

// put adds imp's facts (if it has a name) to e and its PTR candidates to
// the index; it returns the candidate addresses.
func (b *builder) put(e *dnszone.Edit, key kubesource.Key, imp *kubesource.ServiceImport) []netip.Addr {
	if imp == nil {
		b.report(key, nil)
		return nil
	}
	in := newInput(imp, b.cache.SlicesForImport(key.Namespace, key.Name), b.localCluster(imp))
	b.report(key, in.problems)
	svc := importFacts(in)
	if svc == nil {
		return nil
	}
	e.Put(svc)
	var added []netip.Addr
	for ip, p := range ptrRecords(key, svc, b.m.forwardZone()) {
		b.ptrs.add(ip, p)
		added = append(added, ip)
	}
	return added
}

// localCluster is the cluster whose endpoints imp prefers: the local one
// for a headless PreferClose import, when its ID is known; "" otherwise.
// Without an ID the preference is ignored, and the log says so once.
func (b *builder) localCluster(imp *kubesource.ServiceImport) string {
	if !imp.Headless || !imp.PreferClose {
		return ""
	}
	if b.clusterID == "" && !b.warnedNoID {
		b.warnedNoID = true
		log.Warningf("import %s/%s asks for trafficDistribution PreferClose, but the local cluster ID is unknown "+
			"(no cluster_id option, no %s ClusterProperty): every cluster's endpoints are answered, for it and any other such import (said once)",
			imp.Namespace(), imp.Name(), "id.k8s.io")
	}
	return b.clusterID
}

// report logs the import's problems that were not there at its last
// build: each bad input is logged once while it lasts.
func (b *builder) report(key kubesource.Key, problems []string) {
	seen := b.problems[key]
	for _, p := range problems {
		if !slices.Contains(seen, p) {
			log.Warningf("import %s: %s", key, p)
		}
	}
	if len(problems) == 0 {
		delete(b.problems, key)
		return
	}
	b.problems[key] = problems
}

// ptrIndex decides which imported addresses get a PTR record: by the
// specification only one PTR record exists per address, and one that this
// cluster already names (a Service's cluster IP, an endpoint of a local
// EndpointSlice) keeps its cluster-local record. It is owned by the
// builder's goroutine.
type ptrIndex struct {
	// candidates are the records the imports would give each address,
	// sorted by target name: the first one is served.
	candidates map[netip.Addr][]ptrRecord
	// owned lists each import's addresses in candidates.
	owned map[kubesource.Key][]netip.Addr
	// local are the addresses this cluster names.
	local localAddrs
}

func newPtrIndex() ptrIndex {
	return ptrIndex{candidates: map[netip.Addr][]ptrRecord{}, owned: map[kubesource.Key][]netip.Addr{}, local: newLocalAddrs()}
}

// add makes p a candidate for ip.
func (x *ptrIndex) add(ip netip.Addr, p ptrRecord) {
	recs := append(x.candidates[ip], p)
	slices.SortFunc(recs, func(a, b ptrRecord) int { return cmp.Compare(a.target, b.target) })
	x.candidates[ip] = recs
	x.owned[p.imp] = append(x.owned[p.imp], ip)
}

// drop removes the candidates of an import and returns their addresses.
func (x *ptrIndex) drop(imp kubesource.Key) []netip.Addr {
	ips := x.owned[imp]
	for _, ip := range ips {
		kept := slices.DeleteFunc(slices.Clone(x.candidates[ip]), func(p ptrRecord) bool { return p.imp == imp })
		if len(kept) == 0 {
			delete(x.candidates, ip)
		} else {
			x.candidates[ip] = kept
		}
	}
	delete(x.owned, imp)
	return ips
}

// reclaim looks at a local service again and returns the candidate
// addresses whose claim changed: those it took and those it gave up.
func (x *ptrIndex) reclaim(c cacheReader, key kubesource.Key) []netip.Addr {
	return slices.DeleteFunc(x.local.reread(c, key), func(ip netip.Addr) bool {
		_, ok := x.candidates[ip]
		return !ok
	})
}

// served is the PTR record ip gets now: the first candidate, unless this
// cluster names ip itself or no import has it.
func (x *ptrIndex) served(ip netip.Addr) *ptrRecord {
	recs := x.candidates[ip]
	if len(recs) == 0 || x.local.claimed(ip) {
		return nil
	}
	return &recs[0]
}
