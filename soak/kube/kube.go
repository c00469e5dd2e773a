// Package kube runs the soak's scenarios against the Kubernetes plugins:
// it starts a real etcd and kube-apiserver (apiserver), loads the fixture
// (tracked), runs two bin/coredns on it, ours (kubeschema, multicluster and
// edns0autopath) and stock (CoreDNS's kubernetes plugin), and runs the
// scenarios in order: churn, quiet, relist, faults, hostile and slow. It
// renders its own part of docs/reliability.md.
package kube

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/kubeapi"
	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/soak/apiserver"
	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/report"
	"github.com/schemadns/schemadns/soak/server"
	"github.com/schemadns/schemadns/soak/tracked"
)

// Config is the command line's part for the Kubernetes scenarios.
type Config struct {
	CoreDNS             string // the binary
	Loaders             int    // parallel API requests of the fixture loader
	Headless, ClusterIP int
	Endpoints, Imports  int
	Writers, ChurnRate  int
	ChurnDuration       time.Duration
	CheckRate           int
	Outage              time.Duration
	Hostile             int
	SlowConns           int
}

// Validate checks the values.
func (cfg *Config) Validate() error {
	switch {
	case cfg.Headless <= probeServices || cfg.ClusterIP < 1 || cfg.Endpoints < 1:
		return fmt.Errorf("-headless must be over %d, -clusterip and -endpoints at least 1", probeServices)
	case cfg.Writers < 1 || cfg.CheckRate < 1:
		return errors.New("-writers and -check-rate must be at least 1")
	case cfg.ChurnDuration <= 0 || cfg.Outage <= 0:
		return errors.New("-churn-duration and -outage must be positive")
	}
	return nil
}

// shape is the fixture cfg asks for.
func (cfg *Config) shape() tracked.Shape {
	return tracked.Shape{Headless: cfg.Headless, ClusterIP: cfg.ClusterIP, Endpoints: cfg.Endpoints, Imports: cfg.Imports, Loaders: cfg.Loaders}
}

// logf prints progress with the time since start.
var logf = toolflags.Logf

// env is one run's state, shared by the scenarios.
type env struct {
	cfg     *Config
	work    string
	cluster *kubeapi.Cluster
	proxy   *apiserver.Proxy
	fix     *tracked.Fixture
	servers []*server.Server // ours, then stock
	res     *Results
}

func (e *env) ours() *server.Server { return e.servers[0] }

// scenario is one scenario against the Kubernetes plugins.
type scenario struct {
	name string
	fn   func(context.Context) error
}

// scenarios are the Kubernetes scenarios on e, in the order they run.
func scenarios(e *env) []scenario {
	return []scenario{
		{"churn", func(ctx context.Context) (err error) { e.res.Churn, err = runChurn(ctx, e); return err }},
		{"quiet", func(ctx context.Context) (err error) { e.res.Quiet, err = runQuiet(ctx, e); return err }},
		{"relist", func(ctx context.Context) (err error) { e.res.Relist, err = runRelist(ctx, e); return err }},
		{"faults", func(ctx context.Context) (err error) { e.res.Faults, err = runFaults(ctx, e); return err }},
		{"hostile", func(ctx context.Context) (err error) { e.res.Hostile, err = runHostile(ctx, e); return err }},
		{"slow", func(ctx context.Context) (err error) { e.res.Slow, err = runSlow(ctx, e); return err }},
	}
}

// Names are the scenarios' names, in the order they run.
func Names() []string {
	var out []string
	for _, s := range scenarios(&env{}) {
		out = append(out, s.name)
	}
	return out
}

// Run sets up the API server and both servers in work, runs the
// Kubernetes scenarios selected names and stops everything; a scenario's
// error goes into res, a failed set-up is returned.
func Run(ctx context.Context, cfg *Config, selected func(name string) bool, work string, res *Results) error {
	e := &env{cfg: cfg, work: work, res: res}
	defer e.teardown()
	if err := e.setup(ctx); err != nil {
		return err
	}
	for _, s := range scenarios(e) {
		if !selected(s.name) {
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
	if e.cluster, err = apiserver.Start(ctx, e.work); err != nil {
		return err
	}
	if e.proxy, err = apiserver.NewProxy(strings.TrimPrefix(e.cluster.Host, "https://")); err != nil {
		return err
	}
	kc := filepath.Join(e.work, "proxied.kubeconfig")
	if err := apiserver.ProxiedKubeconfig(e.cluster, e.proxy.Addr(), kc); err != nil {
		return err
	}
	if e.fix, err = tracked.NewFixture(e.cfg.shape(), e.cluster); err != nil {
		return err
	}
	start := time.Now()
	if err := e.fix.Load(ctx); err != nil {
		return err
	}
	e.res.LoadSeconds = time.Since(start).Seconds()
	for _, key := range []string{KeyOurs, KeyStock} {
		corefile := func(s *server.Server) string {
			if key == KeyOurs {
				return oursCorefile(kc, s)
			}
			return stockCorefile(kc, s)
		}
		s, err := server.Start(e.cfg.CoreDNS, e.work, key, corefile)
		if err != nil {
			return err
		}
		e.servers = append(e.servers, s)
	}
	for _, s := range e.servers {
		if err := e.waitSynced(ctx, s); err != nil {
			return err
		}
		cur, _, err := s.RSS()
		if err != nil {
			return err
		}
		e.res.SyncedRSS[s.Key] = cur
		logf("%s synced, RSS %s", s, report.MiB(cur))
	}
	return nil
}

// waitSynced waits until s answers for the objects created last and its
// liveness probes pass.
func (e *env) waitSynced(ctx context.Context, s *server.Server) error {
	last := e.fix.Services[len(e.fix.Services)-1]
	lastHL := e.fix.Services[e.cfg.Headless-1]
	for _, t := range []*tracked.Service{last, lastHL} {
		q := new(dns.Msg)
		q.SetQuestion(t.QName, t.QType)
		want := dnsload.SetHash(t.Value())
		err := s.WaitAnswer(ctx, 5*time.Minute, q, func(r *dns.Msg) bool {
			v, ok := tracked.AnswerValue(r)
			return ok && dnsload.SetHash(v) == want
		})
		if err != nil {
			return err
		}
	}
	return e.alive(s)
}

// probes are the liveness probes of s: the A record of a ClusterIP service
// (which no scenario changes), on ours also through edns0autopath (the
// derived search path) and a clusterset.local import.
func (e *env) probes(s *server.Server) []server.Liveness {
	t := e.fix.Services[e.cfg.Headless] // the first ClusterIP service
	ip := t.Svc.Spec.ClusterIP
	out := []server.Liveness{{Addr: s.Addr(), Query: server.Question(t.Name+"."+t.NS+".svc.cluster.local.", dns.TypeA), Check: server.WantA(ip)}}
	if s.Key != KeyOurs {
		return out
	}
	ap := t.Name + ".search." + t.NS + ".cluster.local.ap.k8s.io."
	out = append(out, server.Liveness{Addr: s.APAddr(), Query: server.Question(ap, dns.TypeA), Check: server.WantA(ip)})
	if e.cfg.Imports > 0 {
		imp := observe.Nth(tracked.ImportIPBase, 0).String()
		out = append(out, server.Liveness{Addr: s.Addr(), Query: server.Question(tracked.ImportName(0, len(e.fix.Services)), dns.TypeA), Check: server.WantA(imp)})
	}
	return out
}

// alive runs s's liveness probes over UDP and TCP; each may take three
// tries (a busy machine), and must then answer right.
func (e *env) alive(s *server.Server) error {
	if !s.Alive() {
		return fmt.Errorf("%s has exited; see %s", s, s.LogPath)
	}
	var errs []error
	for _, p := range e.probes(s) {
		for _, network := range []string{"udp", "tcp"} {
			errs = append(errs, server.Probe(p, network))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s liveness: %w", s, err)
	}
	return nil
}

// teardown stops everything the run started.
func (e *env) teardown() {
	for _, s := range e.servers {
		s.Stop()
	}
	if e.proxy != nil {
		e.proxy.Close()
	}
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			logf("stop cluster: %v", err)
		}
	}
}
