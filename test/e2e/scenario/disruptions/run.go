package disruptions

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// Kill kills one DNS container through the runtime while the load
// clients resolve, and counts what they saw until kubelet has restarted it.
func (s *Disruptions) Kill(ctx context.Context) error {
	const section = "8. a DNS pod killed"
	pods, err := s.DNSPods(ctx)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no DNS pod running")
	}
	from := time.Now()
	if err := scenario.Sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	k, err := s.Cluster.KillAndWait(ctx, pods[:1], "")
	s.Report.Assert(section, "kubelet restarts the killed container and it becomes Ready", err == nil,
		"after %.1f s %s", k.Last.Seconds(), scenario.ErrText(err))
	if err := scenario.Sleep(ctx, 15*time.Second); err != nil {
		return err
	}
	s.Report.Figure("DNS container killed (SIGKILL through containerd): back Ready after", fmt.Sprintf("%.1f s", k.Last.Seconds()))
	// Reported, not a bar: until kubelet sees the container gone and
	// kube-proxy drops it, queries sent to it are lost (the resolver
	// retries after its timeout) or refused by its pod's network stack.
	s.ReportLoad(ctx, section, []scenario.Phase{{Name: "DNS pod killed", From: from, To: time.Now(), Leaving: "ours (SIGKILL, restarted)"}})
	return nil
}

// NodeLocal, in the default run: the disruptions with a target through
// the node-local cache, with load clients made after kubelet's clusterDNS
// moved to it.
func (s *Disruptions) NodeLocal(ctx context.Context) error {
	const section = "9. disruptions through node-local"
	clients, err := s.startNodeLocalLoad(ctx)
	if err != nil {
		return err
	}
	defer s.StopLoad(ctx, clients)
	for _, d := range []disruption{
		// Every replica first (one of them may still be in kubelet's
		// restart back-off from section 8), then the drain, which makes
		// new ones.
		s.killEveryReplica(),
		s.drainNode(),
		s.killOneReplica(),
		s.rollNodeLocal(scenario.OursNodeLocal, "node-local rolling update (maxSurge)", noFailOneSlow),
	} {
		if err := s.disrupt(ctx, section, "ours, through node-local", clients, true, d); err != nil {
			return err
		}
	}
	s.Report.Table("Lookups through each disruption ("+section+"; failed: of which new names, which no cache holds)",
		disruptionHeader, s.rowCells())
	return nil
}

// startNodeLocalLoad starts the load clients of manifests/load.yaml,
// which kubelet now points at the node-local cache, and the autopath one.
func (s *Disruptions) startNodeLocalLoad(ctx context.Context) ([]string, error) {
	if err := s.StartLoad(ctx, manifests.Load, scenario.LoadClients); err != nil {
		return nil, err
	}
	if err := s.StartLoad(ctx, manifests.LoadAutopath, []string{autopathClient}); err != nil {
		return nil, err
	}
	return append(append([]string{}, scenario.LoadClients...), autopathClient), nil
}

// Steps are a disruptions run: each setup in turn, from the
// cluster DNS alone (kubeadm's, then ours) to ours's node-local cache and
// stock's in front of it.
func (s *Disruptions) Steps() []scenario.Step {
	s.Report.SetSection(s.section)
	return []scenario.Step{
		{Name: "stock CoreDNS installed", Run: s.InstallStock},
		{Name: "workloads", Run: s.StartWorkloads},
		{Name: "stock, without node-local", Run: s.disruptStockAlone},
		{Name: "ours, without node-local", Run: s.disruptOursAlone},
		{Name: "ours, through ours's node-local", Run: s.disruptOursNodeLocal},
		{Name: "ours, through stock's node-local", Run: s.disruptStockNodeLocal},
	}
}

// The setups of a disruptions run, as its table names them.
const (
	setupStockAlone     = "stock cluster DNS (kubeadm's), no node-local"
	setupOursAlone      = "ours, no node-local"
	setupOursNodeLocal  = "ours, through ours's node-local"
	setupStockNodeLocal = "ours, through stock's node-local"
)

// disruptStockAlone: kubeadm's cluster DNS, the clients on the kube-dns
// VIP, one pod killed.
func (s *Disruptions) disruptStockAlone(ctx context.Context) error {
	if err := s.StartLoad(ctx, manifests.Load, scenario.LoadClients); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	if err := s.StartLoad(ctx, manifests.LoadOptions, loadOptionsClients); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	return s.disrupt(ctx, setupStockAlone, setupStockAlone, allLoadClients(), false, s.killOneReplica())
}

func allLoadClients() []string {
	return append(append([]string{}, scenario.LoadClients...), loadOptionsClients...)
}

// disruptOursAlone: deploy/base, the clients on the kube-dns VIP; each
// replica killed in turn, and a drain.
func (s *Disruptions) disruptOursAlone(ctx context.Context) error {
	base, err := cluster.Overlay("base", "base", s.OurTag, "")
	if err != nil {
		return err
	}
	if _, err := s.Cluster.Kubectl(ctx, nil, "apply", "-k", base); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	if err := s.Cluster.WaitRollout(ctx, scenario.DNSNamespace, scenario.DNSDeploy, 4*time.Minute); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	// Lookups pinned to the old pods show up after they exit.
	if err := scenario.Sleep(ctx, 15*time.Second); err != nil {
		return err
	}
	first := s.killOneReplica()
	first.name += " (1st)"
	second := s.killOneReplica()
	second.name += " (2nd)"
	for _, d := range []disruption{first, second, s.drainNode()} {
		if err := s.disrupt(ctx, setupOursAlone, setupOursAlone, allLoadClients(), false, d); err != nil {
			return err
		}
	}
	return nil
}

// disruptOursNodeLocal: deploy/components/node-local in front, kubelet's
// clusterDNS on it, new load clients; the targets hold here.
func (s *Disruptions) disruptOursNodeLocal(ctx context.Context) error {
	s.StopLoad(ctx, allLoadClients())
	if err := s.ApplyNodeLocal(ctx); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	if err := s.Cluster.RestartKubelet(ctx, scenario.NodeLocalIP); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	clients, err := s.startNodeLocalLoad(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	for _, d := range []disruption{
		// Every replica first, while neither is in kubelet's restart
		// back-off, then the drain, which makes new ones.
		s.killEveryReplica(),
		s.drainNode(),
		s.killOneReplica(),
		s.killNodeLocalPod(scenario.OursNodeLocal),
		s.rollNodeLocal(scenario.OursNodeLocal, "node-local rolling update (maxSurge)", noFailOneSlow),
		s.rollNodeLocalUnavailable(scenario.OursNodeLocal),
	} {
		if err := s.disrupt(ctx, setupOursNodeLocal, setupOursNodeLocal, clients, true, d); err != nil {
			return err
		}
	}
	return nil
}

// disruptStockNodeLocal: stock's node-local cache in place of ours (the
// clients lose their cache while one goes and the other comes: not
// measured), the cluster DNS pods new again, out of any back-off.
func (s *Disruptions) disruptStockNodeLocal(ctx context.Context) error {
	// Stock's cache has no ap.k8s.io block.
	s.StopLoad(ctx, []string{autopathClient})
	err := s.Cluster.Client().AppsV1().DaemonSets(scenario.DNSNamespace).Delete(ctx, scenario.OursNodeLocal, metav1.DeleteOptions{})
	if err != nil {
		return err
	}
	pods, err := s.Cluster.PodsOf(ctx, scenario.DNSNamespace, map[string]string{"k8s-app": scenario.OursNodeLocal})
	if err != nil {
		return err
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	if err := s.Cluster.WaitPodsGone(ctx, scenario.DNSNamespace, names); err != nil {
		return err
	}
	if err := s.Cluster.ApplyManifest(ctx, manifests.StockNodeLocal, s.Placeholders()); err != nil {
		return err
	}
	if err := s.Cluster.WaitDaemonSetReady(ctx, scenario.DNSNamespace, stockNodeLocal); err != nil {
		return err
	}
	if _, err := s.Cluster.Kubectl(ctx, nil, "rollout", "restart", "-n", scenario.DNSNamespace, "deployment/"+scenario.DNSDeploy); err != nil {
		return err
	}
	if err := s.Cluster.WaitRollout(ctx, scenario.DNSNamespace, scenario.DNSDeploy, 4*time.Minute); err != nil {
		return err
	}
	if err := scenario.Sleep(ctx, 10*time.Second); err != nil {
		return err
	}
	for _, d := range []disruption{
		s.killEveryReplica(),
		s.killOneReplica(),
		s.killNodeLocalPod(stockNodeLocal),
		s.rollNodeLocal(stockNodeLocal, "node-local rolling update (stock's maxUnavailable)", nil),
	} {
		if err := s.disrupt(ctx, setupStockNodeLocal, setupStockNodeLocal, scenario.LoadClients, false, d); err != nil {
			return err
		}
	}
	return nil
}
