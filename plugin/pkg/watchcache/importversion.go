package watchcache

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

// The ServiceImport versions the cache can read, preferred first: MCS
// installs serve v1beta1, v1alpha1 or both (mcs-api v0.5 stores v1beta1).
var importVersions = []string{"v1beta1", "v1alpha1"}

// importVersion picks the ServiceImport version to read. The choice is
// made by discovery at each list (the first one and every relist), not
// once: an API server unreachable when the informer starts cannot say
// which version it serves, and a CRD upgrade that stops serving one ends
// the watch, and the relist that follows finds the other.
type importVersion struct {
	mcs   mcsclient.Interface
	disco discovery.DiscoveryInterface

	mu      sync.Mutex
	current string // "" until discovery has found one
}

// importSource lists and watches ServiceImports in the version discovery
// finds. The informer is given no example object: its objects are of
// either version's type, and the transform converts both.
func (c *Cache) importSource() listing {
	v := &importVersion{mcs: c.mcs, disco: c.mcs.Discovery()}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return v.listWatch(true).ListWithContext(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			// A watch that sends the initial events is a list (client-go's
			// watch-list streaming): it chooses again too.
			fresh := o.SendInitialEvents != nil && *o.SendInitialEvents
			return v.listWatch(fresh).WatchWithContext(ctx, o)
		},
	}
	return listing{lw: lw, transform: toServiceImport}
}

// listWatch returns the list-watch of the version to use; fresh asks
// discovery again.
func (v *importVersion) listWatch(fresh bool) *cache.ListWatch {
	version := v.choose(fresh)
	var rc rest.Interface = v.mcs.MulticlusterV1beta1().RESTClient()
	if version == "v1alpha1" {
		rc = v.mcs.MulticlusterV1alpha1().RESTClient()
	}
	return cache.NewFilteredListWatchFromClient(rc, "serviceimports", metav1.NamespaceAll, func(*metav1.ListOptions) {})
}

// choose returns the version to read. When discovery cannot tell (the API
// server is unreachable, or serves neither version) the last choice
// stands, or v1beta1 at first: the list then fails, and its error says
// why (connState reports it), and the next list asks again.
func (v *importVersion) choose(fresh bool) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !fresh && v.current != "" {
		return v.current
	}
	found := v.discover()
	switch {
	case found == "" && v.current == "":
		return importVersions[0]
	case found == "":
		return v.current
	case found != v.current && v.current == "":
		log.Infof("serviceimports: reading %s/%s", resourceGroups[ServiceImports], found)
	case found != v.current:
		log.Infof("serviceimports: the API server no longer serves %s; reading %s/%s", v.current, resourceGroups[ServiceImports], found)
	}
	v.current = found
	return found
}

// discover returns the first of importVersions whose serviceimports the
// API server serves, "" when it serves none or cannot be asked.
func (v *importVersion) discover() string {
	for _, version := range importVersions {
		list, err := v.disco.ServerResourcesForGroupVersion(resourceGroups[ServiceImports] + "/" + version)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			log.Debugf("serviceimports: discovery of %s: %v", version, err)
			return ""
		}
		if hasResource(list, resourceNames[ServiceImports]) {
			return version
		}
	}
	return ""
}
