// Package changes is how a change in a schema's source becomes a new
// snapshot, whatever the source. The path, file by file:
//
//  1. The source notices a change: the watch cache's informers deliver
//     an Event (package kubesource feeds it to the Kubernetes schemas'
//     builders), or a poll of a Mesos master finds a new state
//     (mesosschema).
//  2. The plugin's builder (kubeschema/builder.go, multicluster/builder.go,
//     mesosschema/builder.go) turns it into marks, in its own terms (for
//     the Kubernetes schemas, kubesource's Tracker: the Key of the service
//     or import to rebuild, with the oldest change time not yet served).
//     Marking is quick and never blocks the source.
//  3. The Consumer's goroutine (consumer.go) wakes, and the builder
//     rebuilds what was marked into a dnszone.Edit of the published
//     snapshot, and publishes the result with the NextSerial (serial.go).
//     A burst of changes costs one rebuild and one swap.
//
// Nothing here knows a source's types: this package, and the serving
// core that imports it (dnszone), import neither any source's package nor
// Kubernetes (internal/architecture's rules test checks it).
package changes
