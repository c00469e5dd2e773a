package multicluster

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// clusterProperties is where ClusterProperties are served. There is no
// typed client in the module's dependencies: the dynamic client reads the
// one field needed.
var clusterProperties = schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}

// ClusterIDWatcher follows the id.k8s.io ClusterProperty. It is not an
// informer of the cache: the API is optional (most clusters do not serve
// about.k8s.io), so it neither gates the cache's sync nor reports a
// missing resource as an error, and it watches one object.
type ClusterIDWatcher struct {
	res   dynamic.ResourceInterface
	disco discovery.DiscoveryInterface
	// Poll is how often an API server that does not serve
	// ClusterProperties is asked again; Retry the first wait after a
	// failed call, doubled up to Poll.
	Poll, Retry time.Duration

	id      string // the last value given to fn
	served  bool   // discovery listed clusterproperties at the last look
	looked  bool   // discovery has answered once
	failing bool   // the last call failed, and that was logged
	// failures counts failed calls, logged or not (read by tests while
	// Run goes on).
	failures atomic.Int64
	// first is closed once the first attempt to read the property is over
	// (firstDone set then), whatever its outcome.
	first     chan struct{}
	firstDone bool
}

// NewClusterIDWatcher makes a watcher over h's connection: the same
// HTTP/2 connection, rate limiter and in-flight limit as the cache's
// informers (the apiserver_* options). Keep h until the watcher stops.
func NewClusterIDWatcher(h *kubesource.Handle) (*ClusterIDWatcher, error) {
	rc, hc := h.Connection()
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	return &ClusterIDWatcher{res: dyn.Resource(clusterProperties), disco: disco, Poll: time.Minute, Retry: time.Second,
		first: make(chan struct{})}, nil
}

// FirstLook is closed once Run's first attempt to read the property is
// over: fn has the ID by then if there is one and the API server answered.
// A plugin waits for it (bounded) so that its first answers know the ID.
func (w *ClusterIDWatcher) FirstLook() <-chan struct{} { return w.first }

func (w *ClusterIDWatcher) endFirstLook() {
	if !w.firstDone {
		w.firstDone = true
		close(w.first)
	}
}

// Run calls fn with the cluster ID (lower case, "" when there is none) each
// time it changes, until ctx ends. An API server that does not serve
// ClusterProperties is asked again every Poll, quietly: that is the usual
// case, logged once.
func (w *ClusterIDWatcher) Run(ctx context.Context, fn func(id string)) {
	wait := w.Retry
	for ctx.Err() == nil {
		err := w.follow(ctx, fn)
		w.endFirstLook()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			// The watch ended (its timeout, a compaction): list again
			// after a moment, never in a tight loop.
			wait = w.Retry
		case !w.served:
			wait = w.Poll
		default:
			w.fail(err)
			wait = min(2*wait, w.Poll)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// errNotServed: the API server does not serve ClusterProperties.
var errNotServed = fmt.Errorf("%s not served", clusterProperties.GroupResource())

// follow lists the property, then watches it until the watch ends.
func (w *ClusterIDWatcher) follow(ctx context.Context, fn func(string)) error {
	if !w.discover(fn) {
		return errNotServed
	}
	byName := metav1.ListOptions{FieldSelector: "metadata.name=" + clusterIDProperty}
	list, err := w.res.List(ctx, byName)
	if err != nil {
		return fmt.Errorf("list %s: %w", clusterProperties.GroupResource(), err)
	}
	w.recovered()
	id := ""
	if len(list.Items) > 0 {
		id = propertyValue(&list.Items[0])
	}
	w.set(id, fn)
	w.endFirstLook()
	byName.ResourceVersion = list.GetResourceVersion()
	timeout := int64(300) // the API server closes it then; we list again
	byName.TimeoutSeconds = &timeout
	wi, err := w.res.Watch(ctx, byName)
	if err != nil {
		return fmt.Errorf("watch %s: %w", clusterProperties.GroupResource(), err)
	}
	defer wi.Stop()
	return w.events(wi, fn)
}

// events applies the watch's events until it ends.
func (w *ClusterIDWatcher) events(wi watch.Interface, fn func(string)) error {
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				w.set(propertyValue(u), fn)
			}
		case watch.Deleted:
			w.set("", fn)
		case watch.Error:
			if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
				return fmt.Errorf("watch %s: %w", clusterProperties.GroupResource(), err)
			}
			return nil
		}
	}
	return nil
}

// discover tells whether ClusterProperties are served, logging a change
// (and the first answer when they are not). Without an answer from
// discovery the last one stands.
func (w *ClusterIDWatcher) discover(fn func(string)) bool {
	list, err := w.disco.ServerResourcesForGroupVersion(clusterProperties.GroupVersion().String())
	if err != nil && !apierrors.IsNotFound(err) {
		return w.served
	}
	served := err == nil && hasResource(list, clusterProperties.Resource)
	switch {
	case !served && (w.served || !w.looked):
		log.Infof("the API server does not serve %s: no cluster ID from the %s ClusterProperty", clusterProperties.GroupResource(), clusterIDProperty)
		w.set("", fn)
	case served && !w.served:
		log.Infof("reading the cluster ID from the %s ClusterProperty (%s)", clusterIDProperty, clusterProperties.GroupVersion())
	}
	w.served, w.looked = served, true
	return served
}

func hasResource(list *metav1.APIResourceList, name string) bool {
	for _, r := range list.APIResources {
		if r.Name == name {
			return true
		}
	}
	return false
}

// propertyValue is a ClusterProperty's spec.value, lower case.
func propertyValue(u *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(u.Object, "spec", "value")
	return strings.ToLower(strings.TrimSpace(v))
}

func (w *ClusterIDWatcher) set(id string, fn func(string)) {
	if id != w.id {
		w.id = id
		fn(id)
	}
}

// fail logs the first of a run of failed calls; the ID known stays.
func (w *ClusterIDWatcher) fail(err error) {
	w.failures.Add(1)
	if !w.failing {
		log.Warningf("cannot read the %s ClusterProperty, keeping cluster ID %q: %v", clusterIDProperty, w.id, err)
	}
	w.failing = true
}

func (w *ClusterIDWatcher) recovered() {
	if w.failing {
		log.Infof("reading the %s ClusterProperty again", clusterIDProperty)
	}
	w.failing = false
}
