// Package upgrade is the e2e run's upgrade scenario (sections 1 and 4 of
// docs/e2e.md): the load clients resolve through stock CoreDNS, the
// upgrade to deploy/base as docs/operations.md says, the rollback to the
// stock manifests and the upgrade again, each phase's lookups counted;
// then what the shipped install must be once it runs.
package upgrade

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// Upgrade is the scenario on a cluster; the phases it counts are its
// run's own, so it keeps no state beyond the Env.
type Upgrade struct {
	*scenario.Env
}

// New is the scenario on env's cluster.
func New(env *scenario.Env) *Upgrade { return &Upgrade{env} }

// Run runs the load clients through stock, the upgrade to
// deploy/base as docs/operations.md says (kubectl apply -k), the rollback
// to the stock manifests (ConfigMap first) and the upgrade again, and
// counts the lookups of each phase.
func (u *Upgrade) Run(ctx context.Context) error {
	if err := u.Cluster.ApplyManifest(ctx, manifests.Load, u.Placeholders()); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	if err := u.Cluster.WaitPodsReady(ctx, scenario.AppNS, "load-glibc", "load-musl"); err != nil {
		return fmt.Errorf("%w: %w", scenario.ErrFatal, err)
	}
	base, err := cluster.Overlay("base", "base", u.OurTag, "")
	if err != nil {
		return err
	}
	var phases []scenario.Phase
	mark := func(name string, zero bool, leaving string, action func() error) error {
		p := scenario.Phase{Name: name, From: time.Now(), Bar: zero, Leaving: leaving}
		err := action()
		p.To = time.Now()
		phases = append(phases, p)
		u.Logf("phase %q: %.0fs", name, p.To.Sub(p.From).Seconds())
		return err
	}
	settle := func() error { return scenario.Sleep(ctx, 15*time.Second) }
	rollout := func(apply func() error) func() error {
		return func() error {
			if err := apply(); err != nil {
				return err
			}
			if err := u.Cluster.WaitRollout(ctx, scenario.DNSNamespace, scenario.DNSDeploy, 4*time.Minute); err != nil {
				return err
			}
			// Lookups pinned to the old pods show up after they exit.
			return settle()
		}
	}
	applyOurs := func() error { _, err := u.Cluster.Kubectl(ctx, nil, "apply", "-k", base); return err }
	applyStock := func() error {
		// docs/operations.md: the stock manifests again, their ConfigMap first.
		if err := u.Cluster.ApplyManifest(ctx, manifestDoc(manifests.StockCoreDNS, "kind: ConfigMap"), u.Placeholders()); err != nil {
			return err
		}
		return u.Cluster.ApplyManifest(ctx, manifests.StockCoreDNS, u.Placeholders())
	}
	steps := []struct {
		name, leaving string
		zero          bool
		fn            func() error
	}{
		// The bar holds wherever the pods that go are ours: how a pod goes
		// is its own Deployment's doing (its probe, its lameduck), and
		// kubeadm's pods, probed every 10 s, stay serving after their
		// process has exited, so a client's UDP flow that conntrack pinned
		// to one can lose a lookup. Those phases are reported.
		{"stock, steady", "", true, settle},
		{"upgrade to deploy/base", "stock (kubeadm's)", false, rollout(applyOurs)},
		{"ours, steady", "", true, settle},
		{"rollback to stock", "ours (deploy/base)", true, rollout(applyStock)},
		{"stock again, steady", "", true, settle},
		{"upgrade again", "stock (kubeadm's)", false, rollout(applyOurs)},
	}
	tctx, stopTrack := context.WithCancel(ctx)
	terminations := u.trackTerminations(tctx)
	for _, s := range steps {
		if err := mark(s.name, s.zero, s.leaving, s.fn); err != nil {
			stopTrack()
			return fmt.Errorf("%w: %s: %w", scenario.ErrFatal, s.name, err)
		}
	}
	stopTrack()
	u.Report.Table("DNS pods that went during the upgrade and rollback (terminating: the API's deletionTimestamp; gone: no longer listed)",
		[]string{"pod", "Corefile", "terminating", "gone"}, (<-terminations).rows())
	u.ReportLoad(ctx, "4. upgrade and rollback", phases)
	return u.checkInstalled(ctx)
}

// manifestDoc returns the document of a multi-document manifest that
// contains marker.
func manifestDoc(manifest []byte, marker string) []byte {
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		if strings.Contains(doc, marker) {
			return []byte(doc)
		}
	}
	return nil
}

// termination is when a DNS pod began to terminate and when it was gone.
type termination struct {
	pod, corefile string
	since, gone   time.Time
}

type terminations []*termination

func (ts terminations) rows() [][]string {
	var rows [][]string
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format("15:04:05.000")
	}
	for _, t := range ts {
		rows = append(rows, []string{t.pod, t.corefile, stamp(t.since), stamp(t.gone)})
	}
	return rows
}

// trackTerminations lists the DNS pods every 200 ms until ctx ends and
// sends when each one began terminating and was gone.
func (u *Upgrade) trackTerminations(ctx context.Context) <-chan terminations {
	out := make(chan terminations, 1)
	go func() {
		var all terminations
		byName := map[string]*termination{}
		for ctx.Err() == nil {
			pods, err := u.Cluster.PodsOf(ctx, scenario.DNSNamespace, map[string]string{"k8s-app": "kube-dns"})
			if err == nil {
				listed := map[string]bool{}
				for _, p := range pods {
					listed[p.Name] = true
					if p.DeletionTimestamp != nil && byName[p.Name] == nil {
						// The deletion timestamp is the end of the grace
						// period, to the second.
						since := p.DeletionTimestamp.Time
						if g := p.DeletionGracePeriodSeconds; g != nil {
							since = since.Add(-time.Duration(*g) * time.Second)
						}
						t := &termination{pod: p.Name, corefile: corefileOf(p), since: since}
						byName[p.Name] = t
						all = append(all, t)
					}
				}
				for name, t := range byName {
					if !listed[name] && t.gone.IsZero() {
						t.gone = time.Now()
					}
				}
			}
			_ = scenario.Sleep(ctx, 200*time.Millisecond)
		}
		out <- all
	}()
	return out
}

// corefileOf names the ConfigMap a DNS pod reads: "coredns" is kubeadm's,
// "coredns-config-<hash>" deploy/base's.
func corefileOf(p corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return "?"
}

// checkInstalled checks what the shipped install must be once it runs: our
// image and Corefile, Available through its probes, the process as 65532,
// port 53 answering, metrics scraped from a pod.
func (u *Upgrade) checkInstalled(ctx context.Context) error {
	const section = "1. the shipped install"
	d, err := u.Cluster.Client().AppsV1().Deployments(scenario.DNSNamespace).Get(ctx, scenario.DNSDeploy, metav1.GetOptions{})
	if err != nil {
		return err
	}
	available := false
	for _, c := range d.Status.Conditions {
		if c.Type == "Available" && c.Status == corev1.ConditionTrue {
			available = true
		}
	}
	u.Report.Assert(section, "Deployment coredns Available, all replicas ready", available && d.Status.ReadyReplicas == *d.Spec.Replicas,
		"%d/%d ready", d.Status.ReadyReplicas, *d.Spec.Replicas)
	c := d.Spec.Template.Spec.Containers[0]
	u.Report.Assert(section, "runs our image", c.Image == "schemadns/coredns:"+u.OurTag, "%s", c.Image)
	u.Report.Assert(section, "readiness and liveness probes as shipped", c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil &&
		c.ReadinessProbe.HTTPGet.Path == "/ready" && c.LivenessProbe != nil && c.LivenessProbe.HTTPGet.Path == "/health",
		"readiness %v, liveness %v", c.ReadinessProbe != nil, c.LivenessProbe != nil)
	pods, err := u.DNSPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		uid, err := u.Cluster.ContainerUID(ctx, p)
		u.Report.Assert(section, "pod "+p.Name+": the process runs as uid 65532", err == nil && uid == "65532", "uid %s %v", uid, scenario.ErrText(err))
		m, err := scenario.Ask(net.JoinHostPort(p.Status.PodIP, "53"), "udp", "kubernetes.default.svc.cluster.local.", dns.TypeA)
		u.Report.Assert(section, "pod "+p.Name+": port 53 answers", err == nil && m.Rcode == dns.RcodeSuccess && len(m.Answer) == 1,
			"%s", scenario.Summarize(m, err))
		out, err := u.Cluster.Exec(ctx, scenario.AppNS, "tools", "wget", "-qO-", "http://"+net.JoinHostPort(p.Status.PodIP, "9153")+"/metrics")
		u.Report.Assert(section, "pod "+p.Name+": metrics on 9153 scraped from a pod", err == nil &&
			strings.Contains(out, "coredns_kubeschema_synced") && strings.Contains(out, "coredns_dns_requests_total"),
			"%d bytes %s", len(out), scenario.ErrText(err))
	}
	return nil
}
