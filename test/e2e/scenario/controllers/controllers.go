// Package controllers is the e2e run's check of real controllers
// (section 3 of docs/e2e.md): the web Deployment scaled, a pod's
// readiness flipped and a pod deleted through the real controllers, and,
// for ours and for stock CoreDNS beside it, the delay from the
// EndpointSlice the controller wrote to the answer at the VIP.
package controllers

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/manifests"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// Controllers is the check on a cluster.
type Controllers struct {
	*scenario.Env
}

// New is the check on env's cluster.
func New(env *scenario.Env) *Controllers { return &Controllers{env} }

// readinessFlips is how often a web pod's readiness goes off and on again.
const readinessFlips = 8

// headlessName is the name whose answer follows the web Deployment's pods.
const headlessName = "web-headless.e2e.svc.cluster.local."

// sightings records each change of the address set one observer saw (the
// API, or a DNS server asked through its VIP), in order.
type sightings struct {
	mu      sync.Mutex
	changes []sighting
}

type sighting struct {
	set string
	at  time.Time
}

func newSightings() *sightings { return &sightings{} }

func (s *sightings) see(set string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.changes); n > 0 && s.changes[n-1].set == set {
		return
	}
	s.changes = append(s.changes, sighting{set, at})
}

func (s *sightings) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.changes) == 0 {
		return ""
	}
	return s.changes[len(s.changes)-1].set
}

func (s *sightings) all() []sighting {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sighting(nil), s.changes...)
}

// delays pairs each change the API showed with the first time the server
// answered that set, before the API's next change: how long the answer
// took to follow. A server that never showed the set in that window has
// no delay for it (missed counts those).
func delays(api, server []sighting) (d []time.Duration, missed int) {
	for i, a := range api {
		end := time.Now()
		if i+1 < len(api) {
			end = api[i+1].at
		}
		found := false
		for _, s := range server {
			// A poll can see the answer a moment before the watch event
			// arrives: that is no delay.
			if s.set == a.set && !s.at.Before(a.at.Add(-time.Second)) && s.at.Before(end) {
				d = append(d, max(s.at.Sub(a.at), 0))
				found = true
				break
			}
		}
		if !found {
			missed++
		}
	}
	return d, missed
}

// watchAPI follows web-headless's EndpointSlices with a watch: the ready
// addresses the EndpointSlice controller wrote, seen when the event arrives.
func (c *Controllers) watchAPI(ctx context.Context, s *sightings) {
	api := c.Cluster.Client().DiscoveryV1().EndpointSlices(scenario.AppNS)
	opts := metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web-headless"}
	for ctx.Err() == nil {
		list, err := api.List(ctx, opts)
		if err != nil {
			_ = scenario.Sleep(ctx, 100*time.Millisecond)
			continue
		}
		slices := map[string][]string{}
		for _, sl := range list.Items {
			slices[sl.Name] = readyAddrs(&sl)
		}
		s.see(unionOf(slices), time.Now())
		w, err := api.Watch(ctx, metav1.ListOptions{LabelSelector: opts.LabelSelector, ResourceVersion: list.ResourceVersion})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			sl, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(slices, sl.Name)
			} else {
				slices[sl.Name] = readyAddrs(sl)
			}
			s.see(unionOf(slices), time.Now())
		}
		w.Stop()
	}
}

// readyAddrs lists a slice's ready addresses (ready unset counts as ready).
func readyAddrs(sl *discoveryv1.EndpointSlice) []string {
	var addrs []string
	for _, ep := range sl.Endpoints {
		if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
			addrs = append(addrs, ep.Addresses...)
		}
	}
	return addrs
}

func unionOf(slices map[string][]string) string {
	var all []string
	for _, a := range slices {
		all = append(all, a...)
	}
	return setOf(all)
}

// watchDNS asks a DNS server for the headless name every 5 ms.
func watchDNS(ctx context.Context, server string, s *sightings) {
	for ctx.Err() == nil {
		m, err := scenario.Ask(net.JoinHostPort(server, "53"), "udp", headlessName, dns.TypeA)
		if err == nil {
			var addrs []string
			if m.Rcode == dns.RcodeSuccess {
				for _, rr := range m.Answer {
					if a, ok := rr.(*dns.A); ok {
						addrs = append(addrs, a.A.String())
					}
				}
			}
			s.see(setOf(addrs), time.Now())
		}
		_ = scenario.Sleep(ctx, 5*time.Millisecond)
	}
}

func setOf(addrs []string) string {
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}

// section is the check's section of the report.
const section = "3. real controllers"

// Run changes the web Deployment's pods through the real
// controllers and measures, for ours and for stock CoreDNS beside it, the
// delay from the EndpointSlice the controller wrote to the answer.
func (c *Controllers) Run(ctx context.Context) error {
	repl := c.Placeholders()
	repl["STOCK_VIP"] = cluster.StockVIP
	repl["STOCK_LIMIT"] = "300Mi"
	if err := c.Cluster.ApplyManifest(ctx, manifests.StockBeside, repl); err != nil {
		return err
	}
	if err := c.Cluster.WaitRollout(ctx, scenario.DNSNamespace, "coredns-stock", 2*time.Minute); err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w := c.watch(wctx)
	if err := c.change(ctx, w); err != nil {
		return err
	}
	stop()
	w.wg.Wait()
	c.reportDelays(w.api, w.ours, w.stock)
	return nil
}

// observers are the three watchers of web-headless's addresses: the API,
// ours and stock through their VIPs.
type observers struct {
	api, ours, stock *sightings
	wg               sync.WaitGroup
}

// watch starts the observers; they stop when ctx ends (then wg is done).
func (c *Controllers) watch(ctx context.Context) *observers {
	w := &observers{api: newSightings(), ours: newSightings(), stock: newSightings()}
	for _, f := range []func(){
		func() { c.watchAPI(ctx, w.api) },
		func() { watchDNS(ctx, cluster.DNSVIP, w.ours) },
		func() { watchDNS(ctx, cluster.StockVIP, w.stock) },
	} {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); f() }()
	}
	return w
}

// change scales the web Deployment, flips a pod's readiness and deletes
// it, checking after each change that both servers and a client pod
// answer the ready pods.
func (c *Controllers) change(ctx context.Context, w *observers) error {
	c.settle(ctx, w, "3 replicas", func(n int) bool { return n == 3 })
	if err := c.scale(ctx, 5); err != nil {
		return err
	}
	c.settle(ctx, w, "scaled 3 → 5", func(n int) bool { return n == 5 })
	if err := c.scale(ctx, 2); err != nil {
		return err
	}
	c.settle(ctx, w, "scaled 5 → 2", func(n int) bool { return n == 2 })
	pods, err := c.Cluster.PodsOf(ctx, scenario.AppNS, map[string]string{"app": "web"})
	if err != nil {
		return err
	}
	var live []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return fmt.Errorf("no web pod left")
	}
	victim := live[0].Name
	// Readiness flipped by an exec probe on a file, several times: each
	// flip is an EndpointSlice write of the controller, a sample.
	for i := range readinessFlips {
		if _, err := c.Cluster.Exec(ctx, scenario.AppNS, victim, "rm", "/tmp/ready"); err != nil {
			return err
		}
		c.settle(ctx, w, fmt.Sprintf("readiness of %s off (%d)", victim, i+1), func(n int) bool { return n == 1 })
		if _, err := c.Cluster.Exec(ctx, scenario.AppNS, victim, "touch", "/tmp/ready"); err != nil {
			return err
		}
		c.settle(ctx, w, fmt.Sprintf("readiness of %s on (%d)", victim, i+1), func(n int) bool { return n == 2 })
	}
	if err := c.Cluster.Client().CoreV1().Pods(scenario.AppNS).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		return err
	}
	c.settle(ctx, w, "pod "+victim+" deleted and replaced", func(n int) bool {
		return n == 2 && !strings.Contains(w.api.current(), podIP(live[0]))
	})
	return nil
}

// settle waits until the API shows a set of ready addresses that want
// accepts and both servers answer it, and checks that they do and that a
// client pod sees it too.
func (c *Controllers) settle(ctx context.Context, w *observers, what string, want func(n int) bool) {
	err := cluster.WaitFor(ctx, 2*time.Minute, what, func() error {
		cur := w.api.current()
		if n := len(strings.Split(cur, ",")); cur == "" || !want(n) {
			return fmt.Errorf("API has %q", cur)
		}
		if w.ours.current() != cur || w.stock.current() != cur {
			return fmt.Errorf("API %q, ours %q, stock %q", cur, w.ours.current(), w.stock.current())
		}
		return nil
	})
	cur := w.api.current()
	c.Report.Assert(section, what+": both servers answer the ready pods", err == nil, "%s %s", cur, scenario.ErrText(err))
	out, lerr := c.Cluster.Exec(ctx, scenario.AppNS, "musl", "resolve", "lookup", "-4", "web-headless")
	got := strings.Join(strings.Fields(out)[min(1, len(strings.Fields(out))):], ",")
	c.Report.Assert(section, what+": a client pod sees the ready pods", lerr == nil && got == cur, "%s %s", got, scenario.ErrText(lerr))
}

// scale sets the web Deployment's replicas.
func (c *Controllers) scale(ctx context.Context, n int32) error {
	s, err := c.Cluster.Client().AppsV1().Deployments(scenario.AppNS).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.Spec.Replicas = n
	_, err = c.Cluster.Client().AppsV1().Deployments(scenario.AppNS).UpdateScale(ctx, "web", s, metav1.UpdateOptions{})
	return err
}

func podIP(p corev1.Pod) string { return p.Status.PodIP }

// reportDelays reports, for ours and stock, how long each answer took to
// follow the API's change.
func (c *Controllers) reportDelays(api, ours, stock *sightings) {
	changes := api.all()[1:] // the first is the state before any change
	dOurs, missOurs := delays(changes, ours.all())
	dStock, missStock := delays(changes, stock.all())
	row := func(who string, d []time.Duration, missed int) []string {
		return []string{who, fmt.Sprint(len(changes)), fmt.Sprint(missed), ms(quantile(d, 0.5)), ms(quantile(d, 0.99)), ms(quantile(d, 1))}
	}
	// A change the API replaced within milliseconds may never be answered
	// (the next one is): such a change is counted, not failed; every
	// settled state is checked above.
	c.Report.Table("Delay from the EndpointSlice the controller wrote to the answer at the VIP (the API side by a watch, the DNS side asked every 5 ms)",
		[]string{"server", "API changes", "not answered before the next change", "p50", "p99", "max"},
		[][]string{row("ours (deploy/base)", dOurs, missOurs), row("stock CoreDNS 1.15 (kubeadm's Corefile)", dStock, missStock)})
	c.Report.Figure("controllers: delay from EndpointSlice to answer, ours p50 / p99", ms(quantile(dOurs, 0.5))+" / "+ms(quantile(dOurs, 0.99)))
	c.Report.Figure("controllers: delay from EndpointSlice to answer, stock p50 / p99", ms(quantile(dStock, 0.5))+" / "+ms(quantile(dStock, 0.99)))
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s)-1) + 0.5)
	return s[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
