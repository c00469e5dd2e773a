// Package disruptions is the e2e run's disruption scenarios: what the
// load clients see while a pod goes other than gracefully, the node-local
// cache is updated, or the node is drained, one phase each. The default
// run has a DNS pod killed (section 8 of docs/e2e.md, Kill) and those
// with a target through the node-local cache (section 9, NodeLocal); a
// disruptions run (make e2e SCALE=disruptions, Steps) has them all:
// without node-local (with the dnsConfig options of
// manifests/load-options.yaml), through ours and through stock's
// node-local cache.
//
// A disruption (disruption.go) is one thing done to the cluster (acts.go)
// while the clients resolve; disrupt counts each client's lookups from
// 3 s before it until the cluster has been whole again for a while
// (package loadlog reads them from the clients' logs), checks them
// against the disruption's target and keeps them as a row of the table.
// run.go puts the disruptions in the order of each setup; section.go
// writes the table.
package disruptions

import (
	"context"
	"fmt"
	"time"

	"github.com/schemadns/schemadns/test/e2e/scenario"
	"github.com/schemadns/schemadns/test/e2e/scenario/loadlog"
)

// Disruptions is the scenario on a cluster; it owns the rows of its
// table, every client's lookups through every disruption so far.
type Disruptions struct {
	*scenario.Env
	// rows are the clients' lookups through each disruption.
	rows []disruptionRow
}

// New is the scenario on env's cluster.
func New(env *scenario.Env) *Disruptions { return &Disruptions{Env: env} }

// stockNodeLocal is the DaemonSet of stock's node-local cache (ours is
// scenario.OursNodeLocal).
const stockNodeLocal = "node-local-dns-stock"

// The load clients beside the two of manifests/load.yaml
// (scenario.LoadClients): those with dnsConfig options, and the one with
// the KEP-2009 search path.
var (
	autopathClient     = "load-autopath"
	loadOptionsClients = []string{"load-glibc-timeout1", "load-glibc-timeout1-attempts5", "load-glibc-reopen", "load-musl-timeout1", "load-musl-attempts5"}
)

// disruptionSettle is how long a phase goes on once the cluster is whole
// again: a lookup that lost a query waits out its resolver's timeout
// (glibc: 5 s) before it retries.
const disruptionSettle = 10 * time.Second

// outcome is what a disruption saw of the cluster.
type outcome struct {
	note string
	// back is how long the cluster DNS had no Ready replica, when every
	// one was killed.
	back time.Duration
}

// disruption is one thing done to the cluster while the clients resolve:
// act does it and returns once the cluster is whole again.
type disruption struct {
	name string
	act  func(ctx context.Context) (outcome, error)
	// target, if set, says what a client's lookups must be and whether
	// they are; only where the setup's targets hold (ours through
	// node-local).
	target func(c loadlog.Counts, o outcome) (want string, ok bool)
}

// disruptionRow is a client's lookups through one disruption.
type disruptionRow struct {
	setup, disruption, client string
	c                         loadlog.Counts
	o                         outcome
}

func (r disruptionRow) cells() []string {
	failed := fmt.Sprint(r.c.Fail)
	if r.c.Fail > 0 {
		failed = fmt.Sprintf("%d (%d new names)", r.c.Fail, r.c.FailFresh)
	}
	return []string{r.setup, r.disruption, r.client, fmt.Sprint(r.c.OK + r.c.Fail), failed,
		fmt.Sprint(r.c.Slow), fmt.Sprint(r.c.MaxMs), r.o.note}
}

var disruptionHeader = []string{"setup", "disruption", "client", "lookups", "failed", "over 1 s", "longest ms", "what the cluster did (seconds from the disruption)"}

// disrupt runs d while clients resolve and records their lookups from 3 s
// before it to disruptionSettle after; with targets, each client's
// lookups are checked against d's.
func (s *Disruptions) disrupt(ctx context.Context, section, setup string, clients []string, targets bool, d disruption) error {
	from := time.Now()
	dropsBefore := s.clusterfirstDrops(ctx)
	if err := scenario.Sleep(ctx, 3*time.Second); err != nil {
		return err
	}
	acted := time.Now()
	o, err := d.act(ctx)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", setup, d.name, err)
	}
	if err := scenario.Sleep(ctx, disruptionSettle); err != nil {
		return err
	}
	to := time.Now()
	dropsAfter := s.clusterfirstDrops(ctx)
	dropped := dropsSince(dropsBefore, dropsAfter)
	if dropped > 0 {
		o.note += fmt.Sprintf("; clusterfirst shed ≥ %.0f queries", dropped)
	}
	// No disruption overloads the cluster DNS on purpose: a query
	// clusterfirst sheds here is a lookup lost to a busy node, not to
	// overload (issue 37). Only where the cluster DNS is ours (kubeadm's
	// has no clusterfirst).
	if setup != setupStockAlone && len(dropsAfter) > 0 {
		s.Report.Assert(section, fmt.Sprintf("%s, %s: clusterfirst sheds nothing", setup, d.name), dropped == 0,
			"clusterfirst shed ≥ %.0f queries", dropped)
	}
	s.Logf("disruption %q (%s): %.0f s; %s", d.name, setup, to.Sub(from).Seconds(), o.note)
	for _, client := range clients {
		log, err := s.Cluster.Logs(ctx, scenario.AppNS, client)
		if err != nil {
			return err
		}
		c := loadlog.Parse(log).Count(from, to)
		s.rows = append(s.rows, disruptionRow{setup, d.name, client, c, o})
		if c.Fail+c.Slow > 0 {
			s.Logf("  %s: %d failed, %d over 1 s; %s", client, c.Fail, c.Slow, c.Timeline(acted))
		}
		if targets && d.target != nil {
			want, ok := d.target(c, o)
			s.Report.Assert(section, fmt.Sprintf("%s, %s: %s", client, d.name, want), ok,
				"%d lookups, %d failed (%d new names), %d over 1 s, longest %d ms; %s%s",
				c.OK+c.Fail, c.Fail, c.FailFresh, c.Slow, c.MaxMs, o.note, c.Examples())
		}
	}
	return nil
}

// clusterfirstDrops reads each cluster DNS pod's count of queries its
// clusterfirst plugin shed, in the server or in the kernel (a shed query is a lookup that waits out its
// resolver's timeout, as a lost one does); a pod that does not answer is
// left out.
func (s *Disruptions) clusterfirstDrops(ctx context.Context) map[string]float64 {
	pods, err := s.DNSPods(ctx)
	if err != nil {
		return nil
	}
	drops := map[string]float64{}
	for _, p := range pods {
		url := "http://" + p.Status.PodIP + ":9153/metrics"
		// In the server, and in the kernel by its filter on the listeners.
		v, err := scenario.ScrapeSum(ctx, url, "coredns_clusterfirst_dropped_total")
		k, kerr := scenario.ScrapeSum(ctx, url, `coredns_clusterfirst_listener_drops_total{reason="shed"}`)
		if err == nil && kerr == nil {
			drops[p.Name] = v + k
		}
	}
	return drops
}

// dropsSince adds up what each pod shed since before: all of a new pod's
// count, none of a restarted one's (its count began again).
func dropsSince(before, after map[string]float64) float64 {
	total := 0.0
	for pod, v := range after {
		if v >= before[pod] {
			total += v - before[pod]
		}
	}
	return total
}

// The targets of issue 32, through the node-local cache.
func noFailNoSlow(c loadlog.Counts, _ outcome) (string, bool) {
	return "0 failed lookups, 0 over 1 s", c.Fail == 0 && c.Slow == 0
}

func noFail(c loadlog.Counts, _ outcome) (string, bool) { return "0 failed lookups", c.Fail == 0 }

func noFailOneSlow(c loadlog.Counts, _ outcome) (string, bool) {
	return "0 failed lookups, at most 1 over 1 s", c.Fail == 0 && c.Slow <= 1
}

// everyReplicaTarget: names the cache holds never fail; new names do not
// when a replica is back within 2 s.
func everyReplicaTarget(c loadlog.Counts, o outcome) (string, bool) {
	held := c.Fail - c.FailFresh
	if o.back > 2*time.Second {
		return "0 failed lookups of names the cache holds (a replica was back after more than 2 s: new names may fail)", held == 0
	}
	return "0 failed lookups (a replica was back within 2 s)", c.Fail == 0
}
