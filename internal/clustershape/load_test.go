package clustershape_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/internal/clustershape"
	"github.com/schemadns/schemadns/internal/kubeapi"
)

func TestMain(m *testing.M) { kubeapi.ForTest(m, kubeapi.Options{}) }

// TestLoad writes a small copy of S5 into a real API server: every object
// is accepted as made (the status of a pod that is not scheduled
// included), a second Load of the same layout finds everything written,
// and the API holds the counts the layout gives.
func TestLoad(t *testing.T) {
	c := kubeapi.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := clustershape.S5().Scaled(0.01)
	s.Name = "load"
	l, err := s.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var reports int
	stats, err := clustershape.Load(ctx, c.RESTConfig(), l, clustershape.LoadOptions{
		Progress: func(clustershape.Progress) { reports++ }, ProgressEvery: time.Second})
	if err != nil {
		t.Fatalf("load: %v (%v)", err, stats)
	}
	counts := l.Counts()
	if stats.Done != stats.Total || stats.Pods != counts.Pods || stats.Slices != counts.Slices || reports == 0 {
		t.Errorf("stats %+v after %d reports, counts %+v", stats, reports, counts)
	}
	if _, err := clustershape.Load(ctx, c.RESTConfig(), l, clustershape.LoadOptions{}); err != nil {
		t.Fatalf("second load: %v", err)
	}
	sel := metav1.ListOptions{LabelSelector: clustershape.LabelShape + "=load"}
	svcs, err := c.Client().CoreV1().Services("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	slices, err := c.Client().DiscoveryV1().EndpointSlices("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.Client().CoreV1().Pods("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs.Items) != counts.Services || len(slices.Items) != counts.Slices || len(pods.Items) != counts.Pods {
		t.Errorf("API holds %d services, %d slices, %d pods; want %d, %d, %d",
			len(svcs.Items), len(slices.Items), len(pods.Items), counts.Services, counts.Slices, counts.Pods)
	}
	dual := 0
	for _, svc := range svcs.Items {
		if len(svc.Spec.ClusterIPs) == 2 {
			dual++
		}
	}
	if dual != counts.DualStack {
		t.Errorf("%d services with two cluster IPs, want %d (the API server is dual-stack)", dual, counts.DualStack)
	}
	for _, p := range pods.Items {
		want := l.Pod(0)
		if p.Namespace == want.Namespace && p.Name == want.Name {
			if p.Status.PodIP != want.Status.PodIP || p.Spec.NodeName != "" || p.Status.Phase != want.Status.Phase {
				t.Errorf("pod %s: IP %s, node %q, phase %s; want IP %s, no node, %s",
					p.Name, p.Status.PodIP, p.Spec.NodeName, p.Status.Phase, want.Status.PodIP, want.Status.Phase)
			}
			return
		}
	}
	t.Errorf("pod %s not found", l.Pod(0).Name)
}
