package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/toolflags"
)

const (
	dnsNS     = "kube-system"
	dnsDeploy = "coredns"
	appNS     = "e2e"
)

// installStock installs kubeadm's CoreDNS as the cluster DNS.
func (e *e2e) installStock(ctx context.Context) error {
	if err := e.n.applyManifest(ctx, stockManifest, e.placeholders()); err != nil {
		return fmt.Errorf("%w: %w", errFatal, err)
	}
	if err := e.n.waitRollout(ctx, dnsNS, dnsDeploy, 3*time.Minute); err != nil {
		return fmt.Errorf("%w: %w", errFatal, err)
	}
	return nil
}

// startWorkloads creates what the clients resolve and the client pods.
func (e *e2e) startWorkloads(ctx context.Context) error {
	if err := e.n.applyManifest(ctx, workloadsManifest, e.placeholders()); err != nil {
		return fmt.Errorf("%w: %w", errFatal, err)
	}
	if err := e.n.waitPodsReady(ctx, appNS, "glibc", "glibc-tcp", "musl", "tools", "db-0", "db-1"); err != nil {
		return fmt.Errorf("%w: %w", errFatal, err)
	}
	if err := e.n.waitRollout(ctx, appNS, "web", 2*time.Minute); err != nil {
		return fmt.Errorf("%w: %w", errFatal, err)
	}
	return nil
}

// phase is a stretch of the load run, for counting its lookups.
type phase struct {
	name     string
	from, to time.Time
	// bar: a failed lookup, or fewer than 100 lookups a second, fails the
	// run here; elsewhere they are reported.
	bar bool
	// leaving names whose DNS pods terminate in this phase, if any.
	leaving string
}

// upgradeAndRollback runs the load clients through stock, the upgrade to
// deploy/base as docs/operations.md says (kubectl apply -k), the rollback
// to the stock manifests (ConfigMap first) and the upgrade again, and
// counts the lookups of each phase.
func (e *e2e) upgradeAndRollback(ctx context.Context) error {
	if err := e.n.applyManifest(ctx, loadManifest, e.placeholders()); err != nil {
		return fmt.Errorf("%w: %w", errFatal, err)
	}
	if err := e.n.waitPodsReady(ctx, appNS, "load-glibc", "load-musl"); err != nil {
		return fmt.Errorf("%w: %w", errFatal, err)
	}
	base, err := overlay("base", "base", e.ourTag, "")
	if err != nil {
		return err
	}
	var phases []phase
	mark := func(name string, zero bool, leaving string, action func() error) error {
		p := phase{name: name, from: time.Now(), bar: zero, leaving: leaving}
		err := action()
		p.to = time.Now()
		phases = append(phases, p)
		e.logf("phase %q: %.0fs", name, p.to.Sub(p.from).Seconds())
		return err
	}
	settle := func() error { return sleepCtx(ctx, 15*time.Second) }
	rollout := func(apply func() error) func() error {
		return func() error {
			if err := apply(); err != nil {
				return err
			}
			if err := e.n.waitRollout(ctx, dnsNS, dnsDeploy, 4*time.Minute); err != nil {
				return err
			}
			// Lookups pinned to the old pods show up after they exit.
			return settle()
		}
	}
	applyOurs := func() error { _, err := e.n.kubectlRun(ctx, nil, "apply", "-k", base); return err }
	applyStock := func() error {
		// docs/operations.md: the stock manifests again, their ConfigMap first.
		if err := e.n.applyManifest(ctx, manifestDoc(stockManifest, "kind: ConfigMap"), e.placeholders()); err != nil {
			return err
		}
		return e.n.applyManifest(ctx, stockManifest, e.placeholders())
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
	terminations := e.trackTerminations(tctx)
	for _, s := range steps {
		if err := mark(s.name, s.zero, s.leaving, s.fn); err != nil {
			stopTrack()
			return fmt.Errorf("%w: %s: %w", errFatal, s.name, err)
		}
	}
	stopTrack()
	e.rep.table("DNS pods that went during the upgrade and rollback (terminating: the API's deletionTimestamp; gone: no longer listed)",
		[]string{"pod", "Corefile", "terminating", "gone"}, (<-terminations).rows())
	e.reportLoad(ctx, "4. upgrade and rollback", phases)
	return e.checkInstalled(ctx)
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
func (e *e2e) trackTerminations(ctx context.Context) <-chan terminations {
	out := make(chan terminations, 1)
	go func() {
		var all terminations
		byName := map[string]*termination{}
		for ctx.Err() == nil {
			pods, err := e.n.podsOf(ctx, dnsNS, map[string]string{"k8s-app": "kube-dns"})
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
			_ = sleepCtx(ctx, 200*time.Millisecond)
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

// reportLoad reads the load pods' logs and reports each phase's lookups.
func (e *e2e) reportLoad(ctx context.Context, section string, phases []phase) {
	var rows [][]string
	slowWhenLeaving := map[string]int{}
	for _, pod := range []string{"load-glibc", "load-musl"} {
		log, err := e.n.logs(ctx, appNS, pod)
		if err != nil {
			e.rep.fail(section, err.Error())
			continue
		}
		ll := parseLoadLog(log)
		for _, p := range phases {
			c := ll.count(p.from, p.to)
			secs := p.to.Sub(p.from).Seconds()
			rate := float64(c.ok+c.fail) / secs
			leaving := p.leaving
			if leaving == "" {
				leaving = "none"
			}
			slowWhenLeaving[leaving] += c.slow
			rows = append(rows, []string{pod, p.name, leaving, fmt.Sprintf("%.0f", secs), fmt.Sprint(c.ok + c.fail),
				fmt.Sprint(c.fail), fmt.Sprint(c.slow), fmt.Sprintf("%.0f", rate), fmt.Sprint(c.maxMs)})
			if p.bar {
				e.rep.assert(section, fmt.Sprintf("%s: 0 failed lookups during %q", pod, p.name), c.fail == 0,
					"%d lookups, %d failed, %d slower than 1 s, max %d ms%s", c.ok+c.fail, c.fail, c.slow, c.maxMs, c.examples())
				e.rep.assert(section, fmt.Sprintf("%s: ≥ 100 lookups/s during %q", pod, p.name), rate >= 100,
					"%.0f/s", rate)
			} else if c.fail > 0 {
				e.rep.figure(fmt.Sprintf("%s: failed lookups during %q", pod, p.name), fmt.Sprintf("%d%s", c.fail, c.examples()))
			}
		}
	}
	for _, leaving := range slices.Sorted(maps.Keys(slowWhenLeaving)) {
		if leaving != "none" {
			e.rep.figure(fmt.Sprintf("%s: lookups slower than 1 s (a resolver timeout) while DNS pods of %s went", section, leaving), fmt.Sprint(slowWhenLeaving[leaving]))
		}
	}
	e.rep.table("Lookups per phase ("+section+")",
		[]string{"client", "phase", "DNS pods that went", "seconds", "lookups", "failed", "slower than 1 s", "lookups/s", "max ms"}, rows)
}

// checkInstalled checks what the shipped install must be once it runs: our
// image and Corefile, Available through its probes, the process as 65532,
// port 53 answering, metrics scraped from a pod.
func (e *e2e) checkInstalled(ctx context.Context) error {
	const section = "1. the shipped install"
	d, err := e.n.client().AppsV1().Deployments(dnsNS).Get(ctx, dnsDeploy, metav1.GetOptions{})
	if err != nil {
		return err
	}
	available := false
	for _, c := range d.Status.Conditions {
		if c.Type == "Available" && c.Status == corev1.ConditionTrue {
			available = true
		}
	}
	e.rep.assert(section, "Deployment coredns Available, all replicas ready", available && d.Status.ReadyReplicas == *d.Spec.Replicas,
		"%d/%d ready", d.Status.ReadyReplicas, *d.Spec.Replicas)
	c := d.Spec.Template.Spec.Containers[0]
	e.rep.assert(section, "runs our image", c.Image == "schemadns/coredns:"+e.ourTag, "%s", c.Image)
	e.rep.assert(section, "readiness and liveness probes as shipped", c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil &&
		c.ReadinessProbe.HTTPGet.Path == "/ready" && c.LivenessProbe != nil && c.LivenessProbe.HTTPGet.Path == "/health",
		"readiness %v, liveness %v", c.ReadinessProbe != nil, c.LivenessProbe != nil)
	pods, err := e.dnsPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		uid, err := e.containerUID(ctx, p)
		e.rep.assert(section, "pod "+p.Name+": the process runs as uid 65532", err == nil && uid == "65532", "uid %s %v", uid, errText(err))
		m, err := dnsAsk(net.JoinHostPort(p.Status.PodIP, "53"), "udp", "kubernetes.default.svc.cluster.local.", dns.TypeA)
		e.rep.assert(section, "pod "+p.Name+": port 53 answers", err == nil && m.Rcode == dns.RcodeSuccess && len(m.Answer) == 1,
			"%s", summarize(m, err))
		out, err := e.n.exec(ctx, appNS, "tools", "wget", "-qO-", "http://"+net.JoinHostPort(p.Status.PodIP, "9153")+"/metrics")
		e.rep.assert(section, "pod "+p.Name+": metrics on 9153 scraped from a pod", err == nil &&
			strings.Contains(out, "coredns_kubeschema_synced") && strings.Contains(out, "coredns_dns_requests_total"),
			"%d bytes %s", len(out), errText(err))
	}
	return nil
}

// dnsPods lists the cluster DNS Deployment's running pods.
func (e *e2e) dnsPods(ctx context.Context) ([]corev1.Pod, error) {
	return e.runningPods(ctx, dnsNS, "kube-dns")
}

// containerUID reads the real uid of a pod's first container's process
// from /proc, through the runtime's task list.
func (e *e2e) containerUID(ctx context.Context, p corev1.Pod) (string, error) {
	pid, err := e.containerPID(ctx, p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("no Uid in /proc/%d/status", pid)
}

// containerPID finds the PID of a pod's first container in containerd.
func (e *e2e) containerPID(ctx context.Context, p corev1.Pod) (int, error) {
	if len(p.Status.ContainerStatuses) == 0 {
		return 0, fmt.Errorf("pod %s has no container status", p.Name)
	}
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := e.n.ctr(ctx, "tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == id {
			var pid int
			_, err := fmt.Sscan(f[1], &pid)
			return pid, err
		}
	}
	return 0, fmt.Errorf("container %s not in ctr tasks ls", id)
}

// checkResolvers resolves every kind of name with the resolvers pods use,
// through the kube-dns VIP and the resolv.conf kubelet wrote.
func (e *e2e) checkResolvers(ctx context.Context) error {
	const section = "2. real resolvers in real pods"
	web, err := e.n.client().CoreV1().Services(appNS).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	db0, err := e.n.client().CoreV1().Pods(appNS).Get(ctx, "db-0", metav1.GetOptions{})
	if err != nil {
		return err
	}
	names := []struct{ name, want string }{
		{"web", web.Spec.ClusterIP},
		{"web.e2e", web.Spec.ClusterIP},
		{"web.e2e.svc.cluster.local", web.Spec.ClusterIP},
		{"db-0.db", db0.Status.PodIP},
		{"db-0.db.e2e.svc.cluster.local", db0.Status.PodIP},
		{"ext", externalAddr},
		{"www.external.test", externalAddr},
	}
	for _, nm := range names {
		out, err := e.n.exec(ctx, appNS, "glibc", "getent", "ahostsv4", nm.name)
		got := firstField(out)
		e.rep.assert(section, "glibc getent "+nm.name, err == nil && got == nm.want, "%s %s", got, errText(err))
		out, err = e.n.exec(ctx, appNS, "glibc-tcp", "getent", "ahostsv4", nm.name)
		got = firstField(out)
		e.rep.assert(section, "glibc over TCP (use-vc) "+nm.name, err == nil && got == nm.want, "%s %s", got, errText(err))
		out, err = e.n.exec(ctx, appNS, "musl", "resolve", "lookup", "-4", nm.name)
		want := nm.name + " " + nm.want
		e.rep.assert(section, "musl getaddrinfo "+nm.name, err == nil && strings.TrimSpace(out) == want, "%s %s", strings.TrimSpace(out), errText(err))
	}
	asked := e.stub.count(externalName)
	e.rep.assert(section, "the external name was asked of the upstream stub (forward . /etc/resolv.conf)", asked > 0, "%d queries for %s", asked, externalName)
	digs := []struct {
		what string
		args []string
		want string
	}{
		{"SRV", []string{"+short", "SRV", "_http._tcp.web.e2e.svc.cluster.local"}, "0 100 80 web.e2e.svc.cluster.local."},
		{"SRV of a StatefulSet", []string{"+short", "SRV", "_sql._tcp.db.e2e.svc.cluster.local"}, "0 50 5432 db-0.db.e2e.svc.cluster.local.\n0 50 5432 db-1.db.e2e.svc.cluster.local."},
		{"PTR of a ClusterIP", []string{"+short", "-x", web.Spec.ClusterIP}, "web.e2e.svc.cluster.local."},
		{"PTR of a StatefulSet pod", []string{"+short", "-x", db0.Status.PodIP}, "db-0.db.e2e.svc.cluster.local."},
		{"A over TCP", []string{"+short", "+tcp", "web.e2e.svc.cluster.local"}, web.Spec.ClusterIP},
		{"A over UDP", []string{"+short", "+notcp", "web.e2e.svc.cluster.local"}, web.Spec.ClusterIP},
	}
	for _, d := range digs {
		out, err := e.n.exec(ctx, appNS, "glibc", append([]string{"dig"}, d.args...)...)
		got := sortedLines(out)
		e.rep.assert(section, "dig "+d.what+" (dig "+strings.Join(d.args, " ")+")", err == nil && got == d.want, "%q %s", got, errText(err))
	}
	return nil
}

// dnsAsk sends one query from the harness.
func dnsAsk(addr, netw, name string, qtype uint16) (*dns.Msg, error) {
	c := &dns.Client{Net: netw, Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, addr)
	return r, err
}

func summarize(m *dns.Msg, err error) string {
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, rr := range m.Answer {
		parts = append(parts, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	return dns.RcodeToString[m.Rcode] + " " + strings.Join(parts, "; ")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// firstField is the first word of the first line (getent's address).
func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// sortedLines sorts dig +short's lines (record order varies).
func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// sleepCtx sleeps for d, or until ctx ends (its error then).
var sleepCtx = toolflags.SleepCtx

// ctr runs ctr against the node's containerd in the k8s.io namespace.
func (n *node) ctr(ctx context.Context, args ...string) (string, error) {
	out, err := execOutput(ctx, "ctr", append([]string{"--address", n.sock, "-n", "k8s.io"}, args...)...)
	if err != nil {
		return "", err
	}
	return out, nil
}
