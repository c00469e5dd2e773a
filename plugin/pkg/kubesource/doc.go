// Package kubesource is the Kubernetes side of the schemas (kubeschema,
// multicluster): what they know of Kubernetes, they know through it.
//
//   - cache.go: the watch cache in their words (its types, aliased, and
//     Acquire and Provide). Of the server's packages only this one
//     imports the cache (internal/architecture's rules test holds it).
//   - options.go: the Corefile options every cache reader spells the
//     same: how to reach the API server, the client's limits (shared by
//     the stanzas of one connection).
//   - source.go: the feed of the cache's events into a schema's builder,
//     a changes.Source for the build loop.
//   - tracker.go: the marks a builder keeps until it rebuilds (Key, Set,
//     Tracker): the services or imports, namespaces and ranges that
//     changed, with the oldest change time not yet served.
//   - endpoints.go: the DNS decisions made of cached objects, such as
//     which endpoints of a service are served.
//
// The cache says what the API says; this package says what DNS makes of
// it, so that the serving core (dnszone) and the cache know nothing of
// each other.
package kubesource
