package mesos

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/internal/zookeeper"
	"github.com/schemadns/schemadns/soak/observe"
	"github.com/schemadns/schemadns/soak/server"
)

// env is one Mesos scenario's world.
type env struct {
	cfg     *Config
	sc      scenario
	cluster *cluster
	masters []*mesosmaster.Master
	zk      *zookeeper.Server
	members []*zookeeper.Master // the masters' znodes, with zk
	srv     *server.Server
	hist    *history
	mark    *marker
	health  *observe.Health
	polls   map[string]pollCounters // read as each phase began
	logAt   int64                   // the size of the server's log as the fault began
	// pinned is the last state before the fault, ended the state that
	// ended it (0 until then).
	pinned, ended int
	res           *Result
}

// runScenario sets up sc's masters and server, runs it under the
// checker and returns what it saw.
func runScenario(ctx context.Context, cfg *Config, work string, sc scenario, seed uint64) (*Result, error) {
	window := cfg.Refresh + time.Duration(sc.attempts)*cfg.StateTimeout + slack
	e := &env{cfg: cfg, sc: sc, cluster: newCluster(cfg.Tasks, seed), hist: newHistory(window),
		health: observe.NewHealth(sc.name, "coredns_mesosschema_master_reachable"), polls: map[string]pollCounters{},
		res: &Result{Name: sc.name, Title: sc.title, WindowSeconds: window.Seconds(), ServeSeconds: -1}}
	e.health.SizeName = "coredns_mesosschema_names"
	e.mark = newMarker(e.cluster.markerName())
	defer e.teardown()
	if err := e.setup(ctx, work); err != nil {
		return e.res, err
	}
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.mark.follow(bg, e.srv) })
	if _, err := e.mark.wait(ctx, 0, time.Minute); err != nil {
		stop()
		wg.Wait()
		return e.res, fmt.Errorf("first state: %w", err)
	}
	e.hist.setPhase(observe.PhaseBefore)
	e.readPolls(observe.PhaseBefore)
	wg.Go(func() { e.health.Watch(bg, []*server.Server{e.srv}) })
	wg.Go(func() { check(bg, e.srv, e.hist, cfg.CheckRate) })
	err := sc.run(ctx, e)
	e.readPolls("end")
	stop()
	wg.Wait()
	e.finish()
	e.res.Criteria = sc.criteria(e)
	if aerr := e.alive(); aerr != nil && err == nil {
		err = aerr
	}
	return e.res, err
}

// setup starts the masters (the first leading, with the cluster's first
// state; the second redirecting to it), ZooKeeper with both registered
// when the scenario wants it, and the server.
func (e *env) setup(ctx context.Context, work string) error {
	for i, ip := range []string{firstMasterIP, secondMasterIP}[:e.sc.masters] {
		opts := mesosmaster.Options{Listen: ip + ":0"}
		if i > 0 {
			opts.Leader = e.masters[0].Addr()
		}
		m, err := mesosmaster.Start(opts)
		if err != nil {
			return fmt.Errorf("start a master on %s: %w", ip, err)
		}
		e.masters = append(e.masters, m)
	}
	if _, err := e.publish(e.masters[0], false, nil); err != nil {
		return err
	}
	stanza := "masters " + e.masterList()
	if e.sc.zk {
		var err error
		if e.zk, err = zookeeper.Start(ctx, zookeeper.Options{}); err != nil {
			return err
		}
		for _, m := range e.masters {
			ap := netip.MustParseAddrPort(m.Addr())
			member, err := e.zk.RegisterMaster("/mesos", zookeeper.MasterInfo{IP: ap.Addr().String(), Port: int(ap.Port())})
			if err != nil {
				return err
			}
			e.members = append(e.members, member)
		}
		stanza = "zk " + e.zk.URL("/mesos")
	}
	e.res.Stanza = fmt.Sprintf("%s; refresh %s; state_timeout %s", stanza, e.cfg.Refresh, e.cfg.StateTimeout)
	cf := func(s *server.Server) string { return corefile(s, stanza, e.cfg.Refresh, e.cfg.StateTimeout) }
	var err error
	e.srv, err = server.Start(e.cfg.CoreDNS, work, e.sc.name, cf)
	return err
}

// masterList is the masters stanza's list: the followers first, so that
// the plugin's first poll follows a redirect (307) to the leader.
func (e *env) masterList() string {
	var addrs []string
	for _, m := range slices.Backward(e.masters) {
		addrs = append(addrs, m.Addr())
	}
	return strings.Join(addrs, " ")
}

// publish makes m serve the next good state (the cluster stepped first
// when change is set), then runs then (which makes the state reachable,
// when m is down or not leading); the state is recorded as begun before,
// visible after. It returns the state's number.
func (e *env) publish(m *mesosmaster.Master, change bool, then func() error) (int, error) {
	if change {
		e.cluster.step()
	}
	n := e.hist.count()
	e.cluster.setMarker(n)
	values := e.cluster.expect(netip.MustParseAddrPort(m.Addr()).Addr())
	if got := e.hist.begin(values); got != n {
		return 0, fmt.Errorf("state %d recorded as %d", n, got)
	}
	m.SetStateOf(e.cluster.st)
	if then != nil {
		if err := then(); err != nil {
			return 0, err
		}
	}
	e.hist.visible(n)
	return n, nil
}

// churn publishes a changed state on m about every refresh for d, as
// tasks come and go: the interval is drawn between half and one and a
// half refresh, so that changes fall anywhere between two polls.
func (e *env) churn(ctx context.Context, m *mesosmaster.Master, d time.Duration) error {
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
		if _, err := e.publish(m, true, nil); err != nil {
			return err
		}
		_ = toolflags.SleepCtx(ctx, e.cfg.Refresh/2+time.Duration(e.cluster.r.Int64N(int64(e.cfg.Refresh))))
	}
	return ctx.Err()
}

// settle waits until the server shows the newest state.
func (e *env) settle(ctx context.Context) error {
	n, _ := e.hist.last()
	_, err := e.mark.wait(ctx, n, e.hist.window+10*time.Second)
	return err
}

// calm is the length of the phases before and after a fault.
func (e *env) calm() time.Duration { return max(3*time.Second, e.cfg.Fault/2) }

// before runs the changes before a fault, lets the server catch up and
// starts the fault's phase.
func (e *env) before(ctx context.Context, m *mesosmaster.Master) error {
	if err := e.churn(ctx, m, e.calm()); err != nil {
		return err
	}
	if err := e.settle(ctx); err != nil {
		return err
	}
	e.res.LeaderBefore = netip.MustParseAddrPort(m.Addr()).Addr().String()
	e.res.SerialStart, _ = e.srv.SOASerial(zone)
	e.logAt = e.logSize()
	e.pinned, _ = e.hist.last()
	e.hist.setPhase(observe.PhaseDuring)
	e.readPolls(observe.PhaseDuring)
	e.health.FaultBegins()
	return nil
}

// recover ends the fault by publishing a changed state on m (then makes
// it reachable), times its arrival, and runs the changes after.
func (e *env) recover(ctx context.Context, m *mesosmaster.Master, what string, then func() error) error {
	e.res.SerialEnd, _ = e.srv.SOASerial(zone)
	n, err := e.publish(m, true, then)
	e.health.FaultEnds()
	e.hist.setPhase(observe.PhaseAfter)
	e.readPolls(observe.PhaseAfter)
	if err != nil {
		return err
	}
	e.ended = n
	e.res.ServeWhat = what
	e.res.LeaderAfter = netip.MustParseAddrPort(m.Addr()).Addr().String()
	shown, err := e.mark.wait(ctx, n, e.hist.window+30*time.Second)
	if err != nil {
		return fmt.Errorf("after the fault: %w", err)
	}
	e.res.ServeSeconds = shown.Sub(e.hist.visibleAt(n)).Seconds()
	if err := e.churn(ctx, m, e.calm()); err != nil {
		return err
	}
	if err := e.settle(ctx); err != nil {
		return err
	}
	e.res.LeaderServed = e.leaderServed()
	// Give the gauge its chance to come back before the sampling ends.
	for wait := time.Now().Add(10 * time.Second); e.health.UpAt() < 0 && time.Now().Before(wait); time.Sleep(250 * time.Millisecond) {
	}
	return nil
}

// leaderServed is the address leader.mesos answers.
func (e *env) leaderServed() string {
	q := dnsload.NewQuerier(e.srv.Addr())
	defer q.Close()
	r, _, err := q.Ask("leader."+zone, dns.TypeA)
	if err != nil {
		return err.Error()
	}
	v, _ := answerCanonical(r)
	return v
}

// step records one step of the fault, as the report lists it.
func (e *env) step(format string, args ...any) {
	e.res.Steps = append(e.res.Steps, fmt.Sprintf(format, args...))
	logf("%s: %s", e.sc.name, e.res.Steps[len(e.res.Steps)-1])
}

// waitRequests waits until m has had n more requests for its state than
// it had at from (polls, as a master counts them), for up to within.
func waitRequests(ctx context.Context, m *mesosmaster.Master, from, n int, within time.Duration) error {
	for end := time.Now().Add(within); m.Requests() < from+n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) || ctx.Err() != nil {
			return fmt.Errorf("master %s: %d of %d polls within %s", m.Addr(), m.Requests()-from, n, within)
		}
	}
	return nil
}

// finish collects what the scenario's observers saw.
func (e *env) finish() {
	r := e.res
	r.Check, r.Phases = e.hist.counted()
	r.States = e.hist.count()
	r.Ready, r.Gauge, r.GaugeDown, r.GaugeUp = e.health.Summary()
	r.Names, r.GaugeLast = e.health.Sizes()
	r.Polls = map[string]pollPhase{}
	phases := []string{observe.PhaseBefore, observe.PhaseDuring, observe.PhaseAfter, "end"}
	for i, ph := range phases[:3] {
		from, ok1 := e.polls[ph]
		to, ok2 := e.polls[phases[i+1]]
		if ok1 && ok2 {
			r.Polls[ph] = to.since(from)
		}
	}
	r.Changes, _ = e.changeLatency(0, e.hist.count())
	if e.ended > 0 {
		r.FaultChanges, r.FaultUnseen = e.changeLatency(e.pinned, e.ended)
	}
	if e.srv != nil {
		r.Panics = e.srv.Panics()
		r.LogsBefore, r.Logs, r.LogLines = readLogs(e.srv.LogPath, e.logAt)
	}
}

// changeLatency is the time from each state's being visible (the states
// from+1 to to-1) to the server's first answer that shows it, over the
// states the marker saw; unseen counts the others (a state replaced before
// a poll fetched it is never shown, rightly).
func (e *env) changeLatency(from, to int) (q observe.Quantiles, unseen int) {
	var d []time.Duration
	for n := from + 1; n < to; n++ {
		vis := e.hist.visibleAt(n)
		if vis.IsZero() {
			continue
		}
		if shown, ok := e.mark.shown(n); ok {
			d = append(d, max(shown.Sub(vis), 0))
		} else {
			unseen++
		}
	}
	return observe.Summarise(d), unseen
}

// alive checks that the server still runs and answers.
func (e *env) alive() error {
	if e.srv == nil {
		return nil
	}
	if !e.srv.Alive() {
		return fmt.Errorf("%s has exited; see %s", e.srv, e.srv.LogPath)
	}
	n, _ := e.hist.last()
	p := server.Liveness{Addr: e.srv.Addr(), Query: server.Question(e.cluster.markerName(), dns.TypeA), Check: server.WantA(observe.Nth(markerBase, uint32(n)).String())}
	for _, network := range []string{"udp", "tcp"} {
		if err := server.Probe(p, network); err != nil {
			return fmt.Errorf("%s liveness: %w", e.srv, err)
		}
	}
	return nil
}

// teardown stops the server, ZooKeeper and the masters.
func (e *env) teardown() {
	if e.srv != nil {
		e.srv.Stop()
	}
	if e.zk != nil {
		if err := e.zk.Stop(); err != nil {
			logf("stop ZooKeeper: %v", err)
		}
	}
	for _, m := range e.masters {
		m.Close()
	}
}

// corefile runs mesosschema for the zone mesos with stanza's way to the
// masters (masters or zk), polled every refresh.
func corefile(s *server.Server, stanza string, refresh, stateTimeout time.Duration) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    ready 127.0.0.1:%d
    prometheus 127.0.0.1:%d
    pprof 127.0.0.1:%d
    mesosschema mesos {
        %s
        refresh %s
        state_timeout %s
    }
}
`, s.Port, s.ReadyPort, s.MetricsPort, s.PprofPort, stanza, refresh, stateTimeout)
}
