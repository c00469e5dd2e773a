package watchcache

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// ListWatchFor makes the list-watch of a resource over the cache's one
// connection (rc and hc: clients made from them share its HTTP/2
// connection, rate limiter and in-flight limit).
type ListWatchFor func(rc *rest.Config, hc *http.Client) (*cache.ListWatch, error)

// provided are the list-watches of the resources whose API version is the
// reading schema's choice, not the cache's: ServiceImports, served as
// v1beta1, v1alpha1 or both, which multicluster picks by discovery. It is
// written by the schemas' init functions and read afterwards; a reload
// does not write it.
var provided = struct {
	sync.RWMutex
	m map[Resources]ListWatchFor
}{m: map[Resources]ListWatchFor{}}

// Provide says how resource k is listed and watched; call it from an init
// function. The cache still converts what it lists (ServiceImports of
// either version into ServiceImport).
func Provide(k Resources, f ListWatchFor) {
	provided.Lock()
	defer provided.Unlock()
	provided.m[k] = f
}

func providerOf(k Resources) ListWatchFor {
	provided.RLock()
	defer provided.RUnlock()
	return provided.m[k]
}

// errNotProvided: no plugin of the binary said how to list a resource.
var errNotProvided = fmt.Errorf("no plugin of this binary provides its list-watch (watchcache.Provide)")

// providedListing is the listing of ServiceImports, the one resource
// whose list-watch a schema provides; the informer gets no example
// object, as the objects are of either version's type. Without a
// provider, or when it fails, the resource is watched as an empty one and
// the log says why.
func (c *Cache) providedListing(k Resources) listing {
	f := providerOf(k)
	err := errNotProvided
	if f != nil {
		var lw *cache.ListWatch
		if lw, err = f(c.rc, c.hc); err == nil {
			return listing{lw: lw, transform: toServiceImport}
		}
	}
	log.Errorf("%s cannot be watched: %v", qualifiedResource(k), err)
	return listing{lw: emptyListWatch(), transform: toServiceImport}
}
