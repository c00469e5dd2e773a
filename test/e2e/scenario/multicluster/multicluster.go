// Package multicluster is the e2e run's multicluster check (section 6 of
// docs/e2e.md): deploy/overlays/multicluster applied, and imported
// services (ClusterSetIP and headless) resolved from pods.
package multicluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// Multicluster is the check on a cluster.
type Multicluster struct {
	*scenario.Env
}

// New is the check on env's cluster.
func New(env *scenario.Env) *Multicluster { return &Multicluster{env} }

// Run applies the multicluster overlay and resolves imported
// services from a pod.
func (m *Multicluster) Run(ctx context.Context) error {
	const section = "6. multicluster"
	web, err := m.Cluster.Client().CoreV1().Services(scenario.AppNS).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	dir, err := cluster.Overlay("multicluster", "overlays/multicluster", m.OurTag, "")
	if err != nil {
		return err
	}
	if _, err := m.Cluster.Kubectl(ctx, nil, "apply", "-k", dir); err != nil {
		return err
	}
	if err := m.Cluster.WaitRollout(ctx, scenario.DNSNamespace, scenario.DNSDeploy, 4*time.Minute); err != nil {
		return err
	}
	if err := m.Cluster.ApplyManifest(ctx, manifests.Imports, nil); err != nil {
		return err
	}
	checks := []struct {
		what, pod string
		cmd       []string
		want      string
	}{
		{"glibc: ClusterSetIP import", "glibc", []string{"getent", "ahostsv4", "shop.e2e.svc.clusterset.local"}, "198.19.250.1"},
		{"musl: ClusterSetIP import", "musl", []string{"resolve", "lookup", "-4", "shop.e2e.svc.clusterset.local"}, "shop.e2e.svc.clusterset.local 198.19.250.1"},
		{"glibc: headless import", "glibc", []string{"getent", "ahostsv4", "ledger.e2e.svc.clusterset.local"}, "198.18.200.7"},
		{"glibc: a headless import's host in its cluster", "glibc", []string{"getent", "ahostsv4", "ledger-0.cluster-b.ledger.e2e.svc.clusterset.local"}, "198.18.200.7"},
		{"dig: SRV of a headless import", "glibc", []string{"dig", "+short", "SRV", "_sql._tcp.ledger.e2e.svc.clusterset.local"}, "0 100 5432 ledger-0.cluster-b.ledger.e2e.svc.clusterset.local."},
		{"cluster.local still served", "glibc", []string{"getent", "ahostsv4", "web"}, web.Spec.ClusterIP},
	}
	for _, c := range checks {
		var got string
		// The imports reach the servers through their watch: wait for them.
		err := cluster.WaitFor(ctx, 30*time.Second, c.what, func() error {
			out, err := m.Cluster.Exec(ctx, scenario.AppNS, c.pod, c.cmd...)
			got = strings.TrimSpace(out)
			if c.cmd[0] == "getent" {
				got = scenario.FirstField(out)
			}
			if err != nil || got != c.want {
				return fmt.Errorf("%q %v", got, err)
			}
			return nil
		})
		m.Report.Assert(section, c.what, err == nil, "%s %s", got, scenario.ErrText(err))
	}
	return nil
}
