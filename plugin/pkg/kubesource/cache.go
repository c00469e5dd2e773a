package kubesource

import "github.com/schemadns/schemadns/plugin/pkg/watchcache"

// The watch cache in the words the schemas use. Each name is the cache's
// own (an alias, not a copy: a *Handle is a *watchcache.Handle), so that a
// schema speaks Kubernetes through this one package and only this package
// imports the cache; internal/architecture's rules test holds that. What
// each type holds, and why it holds no more, is said in watchcache.

// The cache, its connection and what it tells.
type (
	// Config says how to reach the API server and which objects to watch;
	// equal Configs share one cache.
	Config = watchcache.Config
	// Limits bound the client's calls (the apiserver_* options).
	Limits = watchcache.Limits
	// Resources is a set of watched resources.
	Resources = watchcache.Resources
	// Handle is one plugin instance's claim on the cache, and its reads.
	Handle = watchcache.Handle
	// Event says that the DNS data of one object may have changed.
	Event = watchcache.Event
	// ListWatchFor makes the list-watch of a resource whose API version
	// is a schema's choice (Provide).
	ListWatchFor = watchcache.ListWatchFor
)

// The resources a schema asks the cache for.
const (
	Services       = watchcache.Services
	EndpointSlices = watchcache.EndpointSlices
	Namespaces     = watchcache.Namespaces
	Pods           = watchcache.Pods
	ServiceImports = watchcache.ServiceImports
	ServiceCIDRs   = watchcache.ServiceCIDRs
)

// The cached objects: what DNS needs of the API's.
type (
	Service       = watchcache.Service
	Port          = watchcache.Port
	EndpointSlice = watchcache.EndpointSlice
	Pod           = watchcache.Pod
	Namespace     = watchcache.Namespace
	ServiceImport = watchcache.ServiceImport
	ServiceCIDR   = watchcache.ServiceCIDR
	// ServiceKind tells how DNS answers for a service are made.
	ServiceKind = watchcache.ServiceKind
)

// The kinds of service.
const (
	ClusterIP               = watchcache.ClusterIP
	HeadlessWithSelector    = watchcache.HeadlessWithSelector
	HeadlessWithoutSelector = watchcache.HeadlessWithoutSelector
	ExternalName            = watchcache.ExternalName
	ClusterSetIP            = watchcache.ClusterSetIP
	MulticlusterHeadless    = watchcache.MulticlusterHeadless
)

// The MCS labels of an imported EndpointSlice.
const (
	// LabelMultiClusterServiceName ties an EndpointSlice to a ServiceImport.
	LabelMultiClusterServiceName = watchcache.LabelMultiClusterServiceName
	// LabelSourceCluster names the member cluster an imported slice comes from.
	LabelSourceCluster = watchcache.LabelSourceCluster
)

// Acquire returns a Handle on the cache for cfg, making the cache on first
// use, and makes sure the resources are watched; with none, it is a claim
// on the cache's one connection (multicluster's ClusterProperty watch
// shares it, and its apiserver_* limits). Release it at shutdown.
func Acquire(cfg Config, resources Resources) (*Handle, error) {
	return watchcache.Acquire(cfg, resources)
}

// Provide says how resource k is listed and watched, for a resource whose
// API version the schema picks (multicluster's ServiceImports); call it
// from an init function.
func Provide(k Resources, f ListWatchFor) { watchcache.Provide(k, f) }
