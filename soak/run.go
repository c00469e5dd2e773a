package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/test/dnsload"
	"github.com/schemadns/schemadns/test/kubeapi"
	"github.com/schemadns/schemadns/test/toolreport"
)

// env is one run's state, shared by the scenarios.
type env struct {
	cfg     *config
	work    string
	cluster *kubeapi.Cluster
	proxy   *proxy
	fix     *fixture
	servers []*server // ours, then stock
	res     *results
}

func (e *env) ours() *server { return e.servers[0] }

// run runs the selected scenarios, the Kubernetes ones first (their
// cluster and servers set up only if one is selected, and stopped before
// the Mesos ones start), and writes the report, also after a scenario
// failed.
func run(ctx context.Context, cfg *config, args []string) error {
	if _, err := os.Stat(cfg.CoreDNS); err != nil {
		return fmt.Errorf("%s missing (make build): %w", cfg.CoreDNS, err)
	}
	work, err := os.MkdirTemp("", "schemadns-soak-")
	if err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	if cfg.Keep {
		logf("work directory (kept): %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	res := newResults(cfg, args)
	if cfg.anySelected("kubernetes") {
		if err := runKubernetes(ctx, cfg, work, res); err != nil {
			return err
		}
	}
	if cfg.anySelected("mesos") && ctx.Err() == nil {
		res.Mesos = newMesosResults(cfg, args)
		runMesos(ctx, cfg, work, res.Mesos)
	}
	res.Finished, res.Machine.LoadEnd = time.Now(), toolreport.LoadAverage()
	if err := writeReport(cfg, res); err != nil {
		return err
	}
	logf("wrote %s", filepath.Join(cfg.OutDir, "reliability.md"))
	errs := res.Errors
	if res.Mesos != nil {
		errs = append(slices.Clone(errs), res.Mesos.Errors...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d scenarios failed: %s", len(errs), strings.Join(errs, "; "))
	}
	return nil
}

// kubeScenario is one scenario against the Kubernetes plugins.
type kubeScenario struct {
	name string
	fn   func(context.Context) error
}

// kubeScenarios are the Kubernetes scenarios on e, in the order they run
// (kubernetesScenarios names them).
func kubeScenarios(e *env) []kubeScenario {
	return []kubeScenario{
		{"churn", func(ctx context.Context) (err error) { e.res.Churn, err = runChurn(ctx, e); return err }},
		{"quiet", func(ctx context.Context) (err error) { e.res.Quiet, err = runQuiet(ctx, e); return err }},
		{"relist", func(ctx context.Context) (err error) { e.res.Relist, err = runRelist(ctx, e); return err }},
		{"faults", func(ctx context.Context) (err error) { e.res.Faults, err = runFaults(ctx, e); return err }},
		{"hostile", func(ctx context.Context) (err error) { e.res.Hostile, err = runHostile(ctx, e); return err }},
		{"slow", func(ctx context.Context) (err error) { e.res.Slow, err = runSlow(ctx, e); return err }},
	}
}

// runKubernetes sets up the API server and both servers, runs the
// selected Kubernetes scenarios and stops everything; a scenario's error
// goes into res, a failed set-up is returned.
func runKubernetes(ctx context.Context, cfg *config, work string, res *results) error {
	e := &env{cfg: cfg, work: work, res: res}
	defer e.teardown()
	if err := e.setup(ctx); err != nil {
		return err
	}
	for _, s := range kubeScenarios(e) {
		if !cfg.isSelected(s.name) {
			continue
		}
		start := time.Now()
		logf("scenario %s", s.name)
		if err := s.fn(ctx); err != nil {
			e.res.Errors = append(e.res.Errors, fmt.Sprintf("%s: %v", s.name, err))
			logf("%s: %v", s.name, err)
		}
		e.res.Durations = append(e.res.Durations, fmt.Sprintf("%s %s", s.name, time.Since(start).Round(time.Second)))
		if ctx.Err() != nil {
			break
		}
	}
	return nil
}

// setup starts the API server and the proxy, loads the fixture and starts
// both servers, returning once both answer for the whole fixture.
func (e *env) setup(ctx context.Context) error {
	var err error
	logf("starting etcd and kube-apiserver")
	if e.cluster, err = startCluster(ctx, e.work); err != nil {
		return err
	}
	if e.proxy, err = newProxy(strings.TrimPrefix(e.cluster.Host, "https://")); err != nil {
		return err
	}
	kc := filepath.Join(e.work, "proxied.kubeconfig")
	if err := proxiedKubeconfig(e.cluster, e.proxy.addr(), kc); err != nil {
		return err
	}
	if e.fix, err = newFixture(e.cfg, e.cluster); err != nil {
		return err
	}
	start := time.Now()
	if err := e.fix.load(ctx); err != nil {
		return err
	}
	e.res.LoadSeconds = time.Since(start).Seconds()
	for _, key := range []string{keyOurs, keyStock} {
		corefile := func(s *server) string {
			if key == keyOurs {
				return oursCorefile(kc, s)
			}
			return stockCorefile(kc, s)
		}
		s, err := startServer(e.cfg, e.work, key, corefile)
		if err != nil {
			return err
		}
		e.servers = append(e.servers, s)
	}
	for _, s := range e.servers {
		if err := e.waitSynced(ctx, s); err != nil {
			return err
		}
		cur, _, err := s.rss()
		if err != nil {
			return err
		}
		e.res.SyncedRSS[s.key] = cur
		logf("%s synced, RSS %s", s, mib(cur))
	}
	return nil
}

// waitSynced waits until s answers for the objects created last and its
// liveness probes pass.
func (e *env) waitSynced(ctx context.Context, s *server) error {
	last := e.fix.services[len(e.fix.services)-1]
	lastHL := e.fix.services[e.cfg.headless-1]
	for _, t := range []*tracked{last, lastHL} {
		q := new(dns.Msg)
		q.SetQuestion(t.qname, t.qtype)
		want := dnsload.SetHash(t.value())
		err := s.waitAnswer(ctx, 5*time.Minute, q, func(r *dns.Msg) bool {
			v, ok := answerValue(r)
			return ok && dnsload.SetHash(v) == want
		})
		if err != nil {
			return err
		}
	}
	return e.alive(s)
}

// liveness is one probe: a query and the check of its answer.
type liveness struct {
	addr  string
	query *dns.Msg
	check func(*dns.Msg) error
}

// probes are the liveness probes of s: the A record of a ClusterIP service
// (which no scenario changes), on ours also through edns0autopath (the
// derived search path) and a clusterset.local import.
func (e *env) probes(s *server) []liveness {
	t := e.fix.services[e.cfg.headless] // the first ClusterIP service
	ip := t.svc.Spec.ClusterIP
	out := []liveness{{addr: s.addr(), query: question(t.name+"."+t.ns+".svc.cluster.local.", dns.TypeA), check: wantA(ip)}}
	if s.key != keyOurs {
		return out
	}
	ap := t.name + ".search." + t.ns + ".cluster.local.ap.k8s.io."
	out = append(out, liveness{addr: s.apAddr(), query: question(ap, dns.TypeA), check: wantA(ip)})
	if e.cfg.imports > 0 {
		imp := nth(importIPBase, 0).String()
		out = append(out, liveness{addr: s.addr(), query: question(importName(0, len(e.fix.services)), dns.TypeA), check: wantA(imp)})
	}
	return out
}

func question(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

// wantA accepts a NOERROR answer whose A records are exactly ip (after any
// CNAME).
func wantA(ip string) func(*dns.Msg) error {
	return func(r *dns.Msg) error {
		if r.Rcode != dns.RcodeSuccess {
			return fmt.Errorf("%s, want NOERROR", dns.RcodeToString[r.Rcode])
		}
		var got []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				got = append(got, a.A.String())
			}
		}
		if len(got) != 1 || got[0] != ip {
			return fmt.Errorf("answer holds %v, want %s", got, ip)
		}
		return nil
	}
}

// alive runs s's liveness probes over UDP and TCP; each may take three
// tries (a busy machine), and must then answer right.
func (e *env) alive(s *server) error {
	if !s.alive() {
		return fmt.Errorf("%s has exited; see %s", s, s.logPath)
	}
	var errs []error
	for _, p := range e.probes(s) {
		for _, network := range []string{"udp", "tcp"} {
			errs = append(errs, probe(p, network))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s liveness: %w", s, err)
	}
	return nil
}

func probe(p liveness, network string) error {
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	var err error
	for range 3 {
		var r *dns.Msg
		m := p.query.Copy()
		m.Id = dns.Id()
		if r, _, err = c.Exchange(m, p.addr); err == nil {
			if err = p.check(r); err == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("%s %s over %s: %w", p.query.Question[0].Name, dns.TypeToString[p.query.Question[0].Qtype], network, err)
}

// teardown stops everything the run started.
func (e *env) teardown() {
	for _, s := range e.servers {
		s.stop()
	}
	if e.proxy != nil {
		e.proxy.close()
	}
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			logf("stop cluster: %v", err)
		}
	}
}
