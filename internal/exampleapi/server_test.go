package exampleapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const services = `apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo, labels: {app: web}}
spec: {clusterIP: 10.96.0.10, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: demo}
spec: {clusterIP: None}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceImport
metadata: {name: web, namespace: demo}
spec: {type: ClusterSetIP, ips: [10.100.0.10]}
---
apiVersion: multicluster.x-k8s.io/v1beta1
kind: ServiceImport
metadata: {name: db, namespace: demo}
spec: {type: Headless}
`

// start serves a directory holding files (name → text) and returns the
// directory, the server and a client-go clientset for it.
func start(t *testing.T, files map[string]string) (string, *Server, *kubernetes.Clientset) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		writeFile(t, filepath.Join(dir, name), text)
	}
	s, err := New(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	s.bookmarkEvery = 50 * time.Millisecond
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, time.Hour) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + l.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return dir, s, cs
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestListsAsTheAPIServer(t *testing.T) {
	_, _, cs := start(t, map[string]string{"a.yaml": services})
	ctx := context.Background()
	all, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 2 || all.Items[0].Name != "db" || all.Items[1].Spec.ClusterIP != "10.96.0.10" {
		t.Fatalf("services: %+v", all.Items)
	}
	web := all.Items[1]
	if web.Namespace != "demo" || web.UID == "" || web.ResourceVersion == "" || web.CreationTimestamp.IsZero() {
		t.Errorf("web's metadata is not filled in as the API server would: %+v", web.ObjectMeta)
	}
	byLabel, err := cs.CoreV1().Services("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(byLabel.Items) != 1 || byLabel.Items[0].Name != "web" {
		t.Errorf("labelSelector app=web: %v %+v", err, byLabel)
	}
	byName, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=db"})
	if err != nil || len(byName.Items) != 1 || byName.Items[0].Name != "db" {
		t.Errorf("fieldSelector metadata.name=db: %v %+v", err, byName)
	}
	if _, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{FieldSelector: "spec.clusterIP=None"}); !apierrors.IsBadRequest(err) {
		t.Errorf("a field selector this server cannot apply: %v, want 400 Bad Request", err)
	}
	other, err := cs.CoreV1().Services("other").List(ctx, metav1.ListOptions{})
	if err != nil || len(other.Items) != 0 {
		t.Errorf("another namespace: %v %+v", err, other)
	}
	cidrs, err := cs.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	if err != nil || len(cidrs.Items) != 1 || strings.Join(cidrs.Items[0].Spec.CIDRs, ",") != "10.96.0.0/16,fd00:10:96::/112" {
		t.Errorf("the ServiceCIDR kube-apiserver makes: %v %+v", err, cidrs)
	}
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pods, of which the files have none: %v, want 404", err)
	}
}

func TestReadOnly(t *testing.T) {
	_, _, cs := start(t, map[string]string{"a.yaml": services})
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "demo"}}
	if _, err := cs.CoreV1().Services("demo").Create(ctx, svc, metav1.CreateOptions{}); !apierrors.IsMethodNotSupported(err) || !strings.Contains(err.Error(), "edit the YAML files") {
		t.Errorf("create: %v, want 405 saying to edit the files", err)
	}
	rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{Verb: "watch", Resource: "services"}},
	}, metav1.CreateOptions{})
	if err != nil || !rev.Status.Allowed {
		t.Errorf("access review: %v %+v", err, rev)
	}
}

// TestDiscoveryServesEachVersion: a custom resource given in two
// versions is served at both, with the newest preferred, as a CRD is.
func TestDiscoveryServesEachVersion(t *testing.T) {
	_, _, cs := start(t, map[string]string{"a.yaml": services})
	groups, err := cs.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var mc *metav1.APIGroup
	for i := range groups.Groups {
		if groups.Groups[i].Name == "multicluster.x-k8s.io" {
			mc = &groups.Groups[i]
		}
	}
	if mc == nil || len(mc.Versions) != 2 || mc.PreferredVersion.Version != "v1beta1" {
		t.Fatalf("multicluster.x-k8s.io: %+v", mc)
	}
	for _, gv := range []string{"multicluster.x-k8s.io/v1alpha1", "multicluster.x-k8s.io/v1beta1"} {
		res, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil || len(res.APIResources) != 1 || res.APIResources[0].Name != "serviceimports" || !res.APIResources[0].Namespaced {
			t.Errorf("%s: %v %+v", gv, err, res)
		}
		var list struct {
			APIVersion string `json:"apiVersion"`
			Items      []struct {
				APIVersion string `json:"apiVersion"`
			} `json:"items"`
		}
		body, err := cs.RESTClient().Get().AbsPath("/apis/" + gv + "/serviceimports").DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &list); err != nil || len(list.Items) != 2 || list.Items[0].APIVersion != gv || list.Items[1].APIVersion != gv {
			t.Errorf("%s list: every import at the version asked for; got %s", gv, body)
		}
	}
}

// TestWatchFollowsTheFiles: a watch from a list's version gets an edit
// as MODIFIED and a removal as DELETED; a file that does not parse, or an
// object given twice, changes nothing.
func TestWatchFollowsTheFiles(t *testing.T) {
	dir, s, cs := start(t, map[string]string{"a.yaml": services})
	ctx := context.Background()
	list, err := cs.CoreV1().Services("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Services("demo").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	path := filepath.Join(dir, "a.yaml")
	writeFile(t, path, services+"\n---\nkind: [\n")
	s.Reload()
	writeFile(t, path, services+"---\n"+services[strings.Index(services, "apiVersion: v1\nkind: Service"):])
	s.Reload()
	if n := s.Objects(); n != 6 {
		t.Fatalf("after two bad edits: %d objects, want the 6 of before", n)
	}

	edited := strings.Replace(services, "10.96.0.10", "10.96.0.11", 1)
	writeFile(t, path, edited)
	s.Reload()
	ev := next(t, w)
	if svc, ok := ev.Object.(*corev1.Service); ev.Type != watch.Modified || !ok || svc.Name != "web" || svc.Spec.ClusterIP != "10.96.0.11" || svc.ResourceVersion <= list.ResourceVersion {
		t.Fatalf("after the edit: %s %+v", ev.Type, ev.Object)
	}
	writeFile(t, path, strings.Replace(edited, "kind: Service\nmetadata: {name: db", "kind: Service\nmetadata: {name: db2", 1))
	s.Reload()
	got := map[string]watch.EventType{}
	for range 2 {
		ev := next(t, w)
		got[ev.Object.(*corev1.Service).Name] = ev.Type
	}
	if got["db"] != watch.Deleted || got["db2"] != watch.Added {
		t.Fatalf("after renaming db: %v, want db DELETED and db2 ADDED", got)
	}
}

// TestWatchListEndsWithTheBookmark: a watch-list (client-go's default)
// streams the objects and then the bookmark that ends them.
func TestWatchListEndsWithTheBookmark(t *testing.T) {
	_, _, cs := start(t, map[string]string{"a.yaml": services})
	yes := true
	w, err := cs.CoreV1().Services("").Watch(context.Background(), metav1.ListOptions{
		SendInitialEvents: &yes, AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []string{"db", "web"} {
		if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*corev1.Service).Name != want {
			t.Fatalf("want %s ADDED, got %s %+v", want, ev.Type, ev.Object)
		}
	}
	ev := next(t, w)
	if svc, ok := ev.Object.(*corev1.Service); ev.Type != watch.Bookmark || !ok || svc.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("want the bookmark that ends the initial events, got %s %+v", ev.Type, ev.Object)
	}
	// Then a bookmark now and then, with no annotation.
	if ev := next(t, w); ev.Type != watch.Bookmark || len(ev.Object.(*corev1.Service).Annotations) != 0 {
		t.Fatalf("want a periodic bookmark, got %s %+v", ev.Type, ev.Object)
	}
}

// TestWatchFromTooOldAVersion: past the event log's bound, a watch is
// told 410 Gone, so that the client lists again.
func TestWatchFromTooOldAVersion(t *testing.T) {
	dir, s, cs := start(t, map[string]string{"a.yaml": services})
	path := filepath.Join(dir, "a.yaml")
	for i := range maxEvents/2 + 1 {
		writeFile(t, path, strings.Replace(services, "{port: 80}", "{port: "+strconv.Itoa(1000+i)+"}", 1)+"---\n"+
			"apiVersion: v1\nkind: Service\nmetadata: {name: x"+strconv.Itoa(i)+", namespace: demo}\nspec: {clusterIP: None}\n")
		s.Reload()
	}
	w, err := cs.CoreV1().Services("demo").Watch(context.Background(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := next(t, w)
	if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != http.StatusGone {
		t.Fatalf("want an ERROR event with 410 Gone, got %s %+v", ev.Type, ev.Object)
	}
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return watch.Event{}
}
