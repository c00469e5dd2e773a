package multicluster

import (
	"bytes"
	"context"
	"fmt"
	golog "log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schemadns/schemadns/internal/kubeapi"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// The ClusterProperty watcher's tests read a real API server: one for the
// package, with the ClusterProperty CRD. (The rest of the package's tests
// need none.)
func TestMain(m *testing.M) { kubeapi.ForTest(m, kubeapi.Options{ClusterProperties: true}) }

// settle bounds how long the watcher may take to see a change.
const settle = 30 * time.Second

// apiEnv is a namespace of its own on the shared API server.
type apiEnv struct {
	ctx  context.Context
	cl   *kubeapi.Cluster
	kube kubernetes.Interface
	ns   string
	cfg  kubesource.Config
}

func newAPIEnv(t *testing.T, prefix string) *apiEnv {
	t.Helper()
	cl := kubeapi.Shared(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	t.Cleanup(cancel)
	ns, err := cl.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return &apiEnv{ctx: ctx, cl: cl, kube: cl.Client(), ns: ns.Name, cfg: kubesource.Config{Kubeconfig: cl.Kubeconfig}}
}

// eventually polls cond until it holds, or fails the test after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s; last seen: %s", timeout, what, describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// idLog collects the values a ClusterIDWatcher reports.
type idLog struct {
	mu  sync.Mutex
	ids []string
}

func (l *idLog) add(id string) { l.mu.Lock(); defer l.mu.Unlock(); l.ids = append(l.ids, id) }

func (l *idLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.ids, ",")
}

// runWatcher runs a ClusterIDWatcher for cfg until the test ends, and
// waits for its first look.
func runWatcher(t *testing.T, cfg kubesource.Config) *idLog {
	t.Helper()
	_, ids := startWatcher(t, cfg)
	return ids
}

// startWatcher is runWatcher that also returns the watcher.
func startWatcher(t *testing.T, cfg kubesource.Config) (*ClusterIDWatcher, *idLog) {
	t.Helper()
	h, err := kubesource.Acquire(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Release)
	w, err := NewClusterIDWatcher(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Poll, w.Retry = 500*time.Millisecond, 20*time.Millisecond
	ids := &idLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, ids.add) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-w.FirstLook():
	case <-time.After(settle):
		t.Fatal("no first look at the ClusterProperty")
	}
	return w, ids
}

// TestClusterIDWatcher follows the id.k8s.io ClusterProperty through its
// creation, a change and its deletion; other properties do not count.
func TestClusterIDWatcher(t *testing.T) {
	e := newAPIEnv(t, "mc-clusterid")
	api := e.cl.Dynamic().Resource(kubeapi.ClusterProperties)
	property := func(name, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"value": value}}}
	}
	if _, err := api.Create(e.ctx, property("clusterset.k8s.io", "set"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), "clusterset.k8s.io", metav1.DeleteOptions{}) })
	ids := runWatcher(t, e.cfg)
	if got := ids.String(); got != "" {
		t.Errorf("reported %q before the id.k8s.io property exists", got)
	}
	if _, err := api.Create(e.ctx, property(clusterIDProperty, "Cluster-A"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), clusterIDProperty, metav1.DeleteOptions{}) })
	eventually(t, settle, "the ID reported", func() bool { return ids.String() == "cluster-a" }, ids.String)
	prop, err := api.Get(e.ctx, clusterIDProperty, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prop.Object["spec"] = map[string]any{"value": "cluster-b"}
	if _, err := api.Update(e.ctx, prop, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "the change reported", func() bool { return ids.String() == "cluster-a,cluster-b" }, ids.String)
	if err := api.Delete(e.ctx, clusterIDProperty, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "the deletion reported", func() bool { return ids.String() == "cluster-a,cluster-b," }, ids.String)
}

// TestClusterIDWatcherForbidden: without permission to read
// ClusterProperties, no ID, and one warning however often it retries.
func TestClusterIDWatcherForbidden(t *testing.T) {
	var buf syncBuffer
	golog.SetOutput(&buf)
	t.Cleanup(func() { golog.SetOutput(os.Stderr) })
	e := newAPIEnv(t, "mc-clusterid-rbac")
	if _, err := e.kube.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := e.cl.ServiceAccountToken(e.ctx, e.ns, "dns")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := e.cl.KubeconfigForToken(token)
	if err != nil {
		t.Fatal(err)
	}
	w, ids := startWatcher(t, kubesource.Config{Kubeconfig: kubeconfig})
	const warning = "cannot read the id.k8s.io ClusterProperty"
	eventually(t, settle, "a warning", func() bool { return strings.Contains(buf.String(), warning) }, buf.String)
	eventually(t, settle, "four failed calls", func() bool { return w.failures.Load() >= 4 },
		func() string { return fmt.Sprint(w.failures.Load(), " failed calls") })
	if n := strings.Count(buf.String(), warning); n != 1 || ids.String() != "" {
		t.Errorf("%d warnings, IDs %q; want one warning and no ID:\n%s", n, ids.String(), buf.String())
	}
}

// syncBuffer is a bytes.Buffer the log may write while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }
