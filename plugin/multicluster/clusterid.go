package multicluster

import (
	"context"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

// clusterIDProperty is the ClusterProperty (about.k8s.io) that names the
// local cluster, for the log.
const clusterIDProperty = "id.k8s.io"

// learntID passes the cluster ID that the id.k8s.io ClusterProperty says
// to the builder, which does not exist yet when the first value comes:
// the watch starts before the cache, so that the first answers know it.
type learntID struct {
	mu sync.Mutex
	id string
	b  *builder
}

// set takes a value of the property ("" when there is none).
func (l *learntID) set(id string) {
	if id != "" && !dnsname.IsLabel(id) {
		log.Warningf("the %s ClusterProperty's value %q is not a DNS label: the local cluster ID stays unknown", clusterIDProperty, id)
		id = ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == l.id {
		return
	}
	if id != "" {
		log.Infof("local cluster ID %q, from the %s ClusterProperty", id, clusterIDProperty)
	} else {
		log.Infof("the local cluster ID is no longer known (no %s ClusterProperty)", clusterIDProperty)
	}
	l.id = id
	if l.b != nil {
		l.b.setClusterID(id)
	}
}

// attach gives b the ID known so far, and every later one.
func (l *learntID) attach(b *builder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = b
	b.clusterID = l.id
}

// watchClusterID follows the id.k8s.io ClusterProperty until Shutdown,
// and waits (up to the startup timeout) for its first reading.
func (m *Multicluster) watchClusterID() error {
	// A handle on the cache's connection, with no informer of its own:
	// the watcher shares the connection and its apiserver_* limits.
	h, err := kubesource.Acquire(m.cfg, 0)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	w, err := NewClusterIDWatcher(h)
	if err != nil {
		h.Release()
		return plugin.Error(pluginName, err)
	}
	m.learnt = &learntID{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, m.learnt.set)
	}()
	m.stopWatch = func() { cancel(); <-done; h.Release() }
	select {
	case <-w.FirstLook():
	case <-time.After(m.startupTimeout):
	}
	return nil
}
