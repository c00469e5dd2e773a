package multicluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

// The ServiceImport version read is multicluster's choice, not the
// cache's: the cache lists and watches ServiceImports with the list-watch
// this file provides, and converts either version.
func init() { kubesource.Provide(kubesource.ServiceImports, importListWatch) }

// importGroup is the API group of ServiceImports.
const importGroup = "multicluster.x-k8s.io"

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

// importListWatch lists and watches ServiceImports, for the shared cache
// (kubesource.Provide), in the version discovery finds, over the cache's
// connection. The cache converts both versions' objects.
func importListWatch(rc *rest.Config, hc *http.Client) (*cache.ListWatch, error) {
	mcs, err := mcsclient.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("create MCS API client: %w", err)
	}
	v := &importVersion{mcs: mcs, disco: mcs.Discovery()}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return v.listWatch(true).ListWithContext(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			// A watch that sends the initial events is a list (client-go's
			// watch-list streaming): it chooses again too.
			fresh := o.SendInitialEvents != nil && *o.SendInitialEvents
			return v.listWatch(fresh).WatchWithContext(ctx, o)
		},
	}, nil
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
		log.Infof("serviceimports: reading %s/%s", importGroup, found)
	case found != v.current:
		log.Infof("serviceimports: the API server no longer serves %s; reading %s/%s", v.current, importGroup, found)
	}
	v.current = found
	return found
}

// discover returns the first of importVersions whose serviceimports the
// API server serves, "" when it serves none or cannot be asked.
func (v *importVersion) discover() string {
	for _, version := range importVersions {
		list, err := v.disco.ServerResourcesForGroupVersion(importGroup + "/" + version)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			log.Debugf("serviceimports: discovery of %s: %v", version, err)
			return ""
		}
		if hasResource(list, "serviceimports") {
			return version
		}
	}
	return ""
}
