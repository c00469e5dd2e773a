// Package dnszone is the zone-serving core that the schema plugins
// (kubeschema, multicluster, mesosschema) share: a compact store of the
// facts each service's answers are made of, published as immutable
// copy-on-write snapshots, and the query path that renders records from
// those facts when a query comes. Only the packages that serve a snapshot
// import it; how a change becomes a snapshot is package changes.
//
// Vocabulary: this package holds answer facts (Facts, EndpointFacts,
// SRVPort, Group), what DNS says of a service. The lean API objects they
// are built from are watchcache's (watchcache.Service, EndpointSlice,
// Port): what the API says. Only the schema plugins' builders read both.
//
// Why render at query time: precomputed dns.RR values cost several hundred
// bytes per endpoint (a record struct, an IP slice, an owner string, a PTR
// record, its reverse name, SRV records per port), more than the stock
// plugin keeps for the same cluster. Here an endpoint keeps 24 bytes in its
// service and 32 in the PTR index (figures_test.go measures both); the
// records of an answer are built in one allocation (block.go), faster
// than the copy a shared record would need for the question's case.
//
// Each plugin keeps only its own schema: what a service, pod or import
// means, and which names exist beyond the common grammar.
//
// The files are arranged by model, so that a model's grammar and answers
// are read, and changed, together. The core every model shares: serve.go
// (ServeDNS, the dispatch of a name to its model, reverse names, the
// reply), apex.go (the apex, its SOA and NS, negative answers), facts.go
// (Facts and the endpoints they keep), snapshot.go (the snapshot, its
// edits and PTR index), render.go and block.go (address records rendered
// in one allocation), transfer.go, lifecycle.go, metrics.go and gauge.go.
// The service model (ServiceNames, the Kubernetes grammar): svcname.go
// (the grammar), svcfacts.go (services, their ports, groups and host
// names), svcserve.go (the answer of each kind of name, aliases),
// svcrender.go (SRV answers and a service's transfer). The record-set
// model (RecordNames, Mesos): records.go. A new model adds its own files
// and a case to the dispatch (serve.go: ServeDNS and lookup) and to
// Records (transfer.go).
package dnszone
