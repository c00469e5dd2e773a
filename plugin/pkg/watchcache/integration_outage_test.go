package watchcache

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
)

// TestServiceImports shows ServiceImports cached with type, IPs and ports,
// and the MCS-labelled slices of an import with their source clusters.
func TestServiceImports(t *testing.T) {
	e := newEnv(t, "wc-mcs")
	h := e.acquire(ServiceImports | EndpointSlices)
	mcs, err := mcsclient.NewForConfig(e.cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	imports := mcs.MulticlusterV1alpha1().ServiceImports(e.ns)
	for _, tc := range []struct {
		name string
		spec mcsv1alpha1.ServiceImportSpec
		want ServiceImport
	}{{
		name: "db",
		spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, IPs: []string{"10.100.0.7"},
			Ports: []mcsv1alpha1.ServicePort{{Name: "SQL", Protocol: corev1.ProtocolTCP, Port: 5432}}},
		want: ServiceImport{IPs: addrs("10.100.0.7"), Ports: []Port{{"sql", "tcp", 5432}}},
	}, {
		name: "cache",
		spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.Headless,
			Ports: []mcsv1alpha1.ServicePort{{Name: "redis", Protocol: corev1.ProtocolTCP, Port: 6379}}},
		want: ServiceImport{Headless: true, Ports: []Port{{"redis", "tcp", 6379}}},
	}} {
		created, err := imports.Create(e.ctx, &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: tc.spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create serviceimport %s: %v", tc.name, err)
		}
		got := cached(t, "serviceimport "+tc.name, func() *ServiceImport { return h.ServiceImport(e.ns, tc.name) })
		want := tc.want
		want.objectMeta = meta(created.ObjectMeta)
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("cached serviceimport:\n got %+v\nwant %+v", *got, want)
		}
	}

	mcsLabels := func(cluster string) map[string]string {
		return map[string]string{LabelMultiClusterServiceName: "db", LabelSourceCluster: cluster}
	}
	e.createSlice(slice("db-west", mcsLabels("west"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.1", true, false), endpoint("10.3.0.2", true, false)))
	e.createSlice(slice("db-east", mcsLabels("east"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.1", true, false)))
	e.createSlice(slice("db-local", forService("db"), discoveryv1.AddressTypeIPv4, endpoint("10.3.0.9", true, false)))
	var got []*EndpointSlice
	eventually(t, settle, "two imported slices cached", func() bool {
		got = h.SlicesForImport(e.ns, "db")
		return len(got) == 2
	}, func() string { return fmt.Sprint(sliceNames(got)) })
	clusters := map[string]string{}
	for _, s := range got {
		clusters[s.Name()] = s.SourceCluster
		if s.MultiClusterService != "db" || s.Service != "" {
			t.Errorf("slice %s: MultiClusterService %q, Service %q; want db and none", s.Name(), s.MultiClusterService, s.Service)
		}
	}
	if want := map[string]string{"db-west": "west", "db-east": "east"}; !reflect.DeepEqual(clusters, want) {
		t.Errorf("source clusters = %v, want %v", clusters, want)
	}
}

// TestRelistCounted shows relists_total counting a relist whichever way
// client-go makes it: a plain list, or (its default) a watch that sends
// the initial events, with the options its reflector uses. The first list
// and plain watches are not relists.
func TestRelistCounted(t *testing.T) {
	e := newEnv(t, "wc-relist")
	c, err := newCache(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	lw := newConnState(Services).instrument(c.listingOf(Services).lw)
	counter := relists.WithLabelValues("services")
	base := metricValue(counter)
	watch := func(o metav1.ListOptions) {
		t.Helper()
		w, err := lw.WatchWithContext(e.ctx, o)
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		w.Stop()
	}
	watchList := metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	for i, step := range []struct {
		name string
		call func()
		want float64
	}{
		{"first watch-list", func() { watch(watchList) }, 0},
		{"second watch-list", func() { watch(watchList) }, 1},
		{"plain watch", func() { watch(metav1.ListOptions{AllowWatchBookmarks: true}) }, 1},
		{"plain list", func() {
			if _, err := lw.ListWithContext(e.ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("list: %v", err)
			}
		}, 2},
	} {
		step.call()
		if got := metricValue(counter) - base; got != step.want {
			t.Errorf("step %d (%s): relists_total rose by %v, want %v", i, step.name, got, step.want)
		}
	}
}

// metricValue reads a gauge or counter, as testutil.ToFloat64 would; testutil
// itself needs github.com/kylelemons/godebug, which go.mod lacks.
func metricValue(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		panic(err)
	}
	if g := out.GetGauge(); g != nil {
		return g.GetValue()
	}
	return out.GetCounter().GetValue()
}

// TestOutage shows the cache serving its last state while the API server
// is down, reporting the outage in its metrics, and catching up with
// changes made after it comes back. It stops the shared API server, so it
// restarts it whatever happens.
func TestOutage(t *testing.T) {
	e := newEnv(t, "wc-outage")
	h := e.acquire(Services)
	e.createService(clusterIPService("old"))
	cached(t, "service old", func() *Service { return h.Service(e.ns, "old") })

	reachable := apiReachable.WithLabelValues("services")
	show := func() string { return fmt.Sprint(metricValue(reachable)) }
	if v := metricValue(reachable); v != 1 {
		t.Fatalf("api_reachable{services} = %v before the outage, want 1", v)
	}
	errs0 := metricValue(watchErrors.WithLabelValues("services"))
	relists0 := metricValue(relists.WithLabelValues("services"))

	t.Cleanup(func() {
		if err := e.cl.StartAPIServer(context.Background()); err != nil {
			t.Errorf("restart kube-apiserver: %v", err)
		}
	})
	if err := e.cl.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	eventually(t, settle, "api_reachable{services} = 0 during the outage",
		func() bool { return metricValue(reachable) == 0 }, show)
	t.Logf("outage noticed in %s", time.Since(down).Round(time.Millisecond))
	if h.Service(e.ns, "old") == nil || !h.HasSynced(Services) {
		t.Errorf("during the outage: service old not served, or cache no longer synced")
	}

	if err := e.cl.StartAPIServer(e.ctx); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	e.createService(clusterIPService("new"))
	if err := e.kube.CoreV1().Services(e.ns).Delete(e.ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, recovery, "the cache sees new created and old deleted after the outage",
		func() bool { return h.Service(e.ns, "new") != nil && h.Service(e.ns, "old") == nil },
		func() string { return fmt.Sprintf("new %v, old %v", h.Service(e.ns, "new"), h.Service(e.ns, "old")) })
	t.Logf("caught up %s after the restart", time.Since(up).Round(time.Millisecond))
	eventually(t, settle, "api_reachable{services} = 1 after the outage",
		func() bool { return metricValue(reachable) == 1 }, show)

	errs := metricValue(watchErrors.WithLabelValues("services")) - errs0
	rel := metricValue(relists.WithLabelValues("services")) - relists0
	t.Logf("during the outage: %v failed calls, %v relists", errs, rel)
	if errs == 0 && rel == 0 {
		t.Errorf("neither errors_total nor relists_total of services increased")
	}
}

// TestPermissionDenied runs a cache as a ServiceAccount that may list and
// watch services but nothing else. Services sync; EndpointSlices are
// reported refused (both verbs) and keep the cache unsynced, so readiness
// stays failed; granting the permission recovers without a restart.
func TestPermissionDenied(t *testing.T) {
	e := newEnv(t, "wc-rbac")
	rbac := e.kube.RbacV1()
	sa, err := e.kube.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dns"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "watch"}}},
	}
	if role, err = rbac.ClusterRoles().Create(e.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: e.ns, Name: sa.Name}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(e.ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	token, err := e.cl.ServiceAccountToken(e.ctx, e.ns, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := e.cl.KubeconfigForToken(token)
	if err != nil {
		t.Fatal(err)
	}

	h, err := Acquire(Config{Kubeconfig: kubeconfig}, Services|EndpointSlices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Release)
	denied := func(verb string) float64 {
		return metricValue(permissionDenied.WithLabelValues("endpointslices", verb))
	}
	show := func() string {
		return fmt.Sprintf("services synced %v, all synced %v, denied list=%v watch=%v",
			h.HasSynced(Services), h.HasSynced(Services|EndpointSlices), denied("list"), denied("watch"))
	}
	eventually(t, settle, "services synced and endpointslices refused",
		func() bool { return h.HasSynced(Services) && denied("list") == 1 && denied("watch") == 1 }, show)
	if h.HasSynced(Services|EndpointSlices) || h.HasSynced(EndpointSlices) {
		t.Errorf("synced without permission on endpointslices: %s", show())
	}
	for _, verb := range []string{"list", "watch"} {
		if v := metricValue(permissionDenied.WithLabelValues("services", verb)); v != 0 {
			t.Errorf("permission_denied{services,%s} = %v, want 0", verb, v)
		}
	}

	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}})
	if _, err := rbac.ClusterRoles().Update(e.ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The reflector retries with a backoff of up to 30 s.
	eventually(t, recovery, "synced once the permission is granted",
		func() bool {
			return h.HasSynced(Services|EndpointSlices) && denied("list") == 0 && denied("watch") == 0
		}, show)
}

// TestPodNamesNotKept: without EndpointPodNames the cache keeps no pod
// name, which no answer needs then.
func TestPodNamesNotKept(t *testing.T) {
	e := newEnv(t, "wc-podnames")
	h := e.acquire(Services | EndpointSlices)
	e.createService(clusterIPService("web"))
	e.createSlice(slice("web-a", forService("web"), discoveryv1.AddressTypeIPv4, endpoint("10.1.0.2", true, false, pod("web-0"))))
	var got []*EndpointSlice
	eventually(t, settle, "the slice cached", func() bool {
		got = h.SlicesForService(e.ns, "web")
		return len(got) == 1
	}, func() string { return fmt.Sprint(sliceNames(got)) })
	if eps := got[0].Endpoints; len(eps) != 1 || eps[0].PodName != "" || eps[0].Addresses[0].String() != "10.1.0.2" {
		t.Errorf("cached endpoints %+v: want 10.1.0.2 without its pod name", eps)
	}
}
