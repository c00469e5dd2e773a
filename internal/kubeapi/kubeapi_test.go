package kubeapi_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

func TestMain(m *testing.M) { kubeapi.ForTest(m, kubeapi.Options{}) }

// TestDualStackService shows that the Service CIDRs allow dual-stack
// Services: one IPv4 and one IPv6 ClusterIP.
func TestDualStackService(t *testing.T) {
	c := kubeapi.Shared(t)
	ctx := testContext(t)
	ns := createNamespace(ctx, t, c.Client(), "dualstack")
	svc := createService(ctx, t, c.Client(), ns, "web")

	if len(svc.Spec.ClusterIPs) != 2 {
		t.Fatalf("ClusterIPs = %v, want two", svc.Spec.ClusterIPs)
	}
	v4, v6 := 0, 0
	for _, s := range svc.Spec.ClusterIPs {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			t.Fatalf("ClusterIP %q: %v", s, err)
		}
		if ip.Is4() {
			v4++
		} else if ip.Is6() {
			v6++
		}
	}
	if v4 != 1 || v6 != 1 {
		t.Errorf("ClusterIPs = %v, want one IPv4 and one IPv6", svc.Spec.ClusterIPs)
	}
}

// TestServiceImportsServed shows that the MCS CRDs are installed.
func TestServiceImportsServed(t *testing.T) {
	c := kubeapi.Shared(t)
	ctx := testContext(t)
	list, err := c.Dynamic().Resource(kubeapi.ServiceImports).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list serviceimports: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("serviceimports = %d items, want none", len(list.Items))
	}
}

// TestServiceAccountToken shows that a TokenRequest token authenticates
// through a kubeconfig of its own, and that RBAC forbids what it was not
// granted: the basis of least-privilege tests.
func TestServiceAccountToken(t *testing.T) {
	c := kubeapi.Shared(t)
	ctx := testContext(t)
	ns := createNamespace(ctx, t, c.Client(), "token")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}
	if _, err := c.Client().CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	token, err := c.ServiceAccountToken(ctx, ns, "reader")
	if err != nil {
		t.Fatal(err)
	}
	client := clientFromKubeconfig(t, c, token)

	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject review: %v", err)
	}
	if got, want := review.Status.UserInfo.Username, "system:serviceaccount:"+ns+":reader"; got != want {
		t.Errorf("authenticated as %q, want %q", got, want)
	}
	_, err = client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("list services as the service account: err = %v, want 403 Forbidden", err)
	}
}

// TestAPIServerRestart shows that an outage loses no data and that a client
// made before it works again afterwards without being rebuilt.
func TestAPIServerRestart(t *testing.T) {
	c := kubeapi.Shared(t)
	ctx := testContext(t)
	client := c.Client()
	ns := createNamespace(ctx, t, client, "restart")
	before := createService(ctx, t, client, ns, "survivor")

	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	down, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := client.CoreV1().Services(ns).Get(down, "survivor", metav1.GetOptions{}); err == nil {
		t.Fatal("get succeeded while the API server was stopped")
	}
	start := time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted in %s", time.Since(start).Round(time.Millisecond))

	after, err := client.CoreV1().Services(ns).Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if after.UID != before.UID {
		t.Errorf("UID after restart = %s, want %s", after.UID, before.UID)
	}
}

// testContext bounds one test; an API call never waits past it.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// createNamespace creates a namespace named after prefix; tests share the
// cluster, so each works in its own.
func createNamespace(ctx context.Context, t *testing.T, client kubernetes.Interface, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	ns, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// createService creates a dual-stack ClusterIP Service.
func createService(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			IPFamilyPolicy: new(corev1.IPFamilyPolicyRequireDualStack),
			Ports:          []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
	svc, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	return svc
}

// clientFromKubeconfig loads the kubeconfig that c writes for token, so the
// test covers the file, not just the token.
func clientFromKubeconfig(t *testing.T, c *kubeapi.Cluster, token string) kubernetes.Interface {
	t.Helper()
	path, err := c.KubeconfigForToken(token)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return client
}
