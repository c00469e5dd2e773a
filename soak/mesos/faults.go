package mesos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// The scenarios. Each runs the changes before its fault (e.before), the
// fault, and ends it with a changed state (e.recover); runScenario
// runs the checker, the marker and the gauge's sampling throughout.

// runOutage: the only master goes down (connection refused), then
// comes back with a changed state.
func runOutage(ctx context.Context, e *env) error {
	m := e.masters[0]
	e.res.WantDown = true
	if err := e.before(ctx, m); err != nil {
		return err
	}
	if err := m.SetDown(true); err != nil {
		return err
	}
	e.step("%s down (connection refused) for %s", m.Addr(), e.cfg.Fault)
	_ = toolflags.SleepCtx(ctx, e.cfg.Fault)
	return e.recover(ctx, m, "the master back with a changed state", func() error { return m.SetDown(false) })
}

// outageCriteria: the promises of a fault that leaves no good master.
func outageCriteria(e *env) []criterion { return e.commonCriteria() }

// badPolls is how many polls each bad state is served for.
const badPolls = 3

// badState is one way a master's answer can be bad: apply makes m serve it,
// from good, the body of the current state as m serves it.
type badState struct {
	what  string
	apply func(m *mesosmaster.Master, good []byte)
}

// body serves make(good) as the state.
func body(make func(good []byte) []byte) func(*mesosmaster.Master, []byte) {
	return func(m *mesosmaster.Master, good []byte) { m.SetState(make(good)) }
}

// badStates are the bad states, in the order they are served.
var badStates = []badState{
	{"truncated (the first half of the state)", body(func(good []byte) []byte { return good[:len(good)/2] })},
	{"malformed JSON (a colon after the middle made '=')", body(func(good []byte) []byte {
		b := bytes.Clone(good)
		if i := bytes.Index(b[len(b)/2:], []byte(`":`)); i >= 0 {
			b[len(b)/2+i+1] = '='
		}
		return b
	})},
	{"`{}`", body(func([]byte) []byte { return []byte("{}") })},
	{"valid JSON of the wrong shape (frameworks an object)", body(func(good []byte) []byte {
		return reshape(good, func(m map[string]json.RawMessage) {
			m["frameworks"] = append(append([]byte(`{"marathon":`), m["frameworks"]...), '}')
		})
	})},
	{"a state naming no leader (no leader, no leader_info)", body(func(good []byte) []byte {
		return reshape(good, func(m map[string]json.RawMessage) { delete(m, "leader"); delete(m, "leader_info") })
	})},
	{"a state naming another leader, which refuses connections", body(func(good []byte) []byte {
		return reshape(good, func(m map[string]json.RawMessage) {
			m["leader"] = json.RawMessage(`"master@127.0.0.9:1"`)
			delete(m, "leader_info")
		})
	})},
	{"an empty body", body(func([]byte) []byte { return nil })},
	{"the state followed by an HTML error page", body(func(good []byte) []byte {
		return append(bytes.Clone(good), "\n<html><body>502 Bad Gateway</body></html>\n"...)
	})},
	{"HTTP 500", func(m *mesosmaster.Master, _ []byte) { m.SetStatus(http.StatusInternalServerError) }},
}

// reshape decodes a state's top-level object, changes it and encodes it.
func reshape(good []byte, change func(map[string]json.RawMessage)) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(good, &m); err != nil {
		panic(fmt.Sprintf("soak: a state the soak wrote does not decode: %v", err))
	}
	change(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("soak: re-encode a state: %v", err))
	}
	return b
}

// leaderBody is the current state as m serves it when leading, as
// SetStateOf writes it as far as a check of the leader goes.
func (e *env) leaderBody(m *mesosmaster.Master) []byte {
	own := *e.cluster.st
	own.Leader, own.PID = m.PID(), m.PID()
	return mesosstatetest.Marshal(&own)
}

// runBadState: the master serves each bad state for badPolls polls,
// then a good, changed state.
func runBadState(ctx context.Context, e *env) error {
	m := e.masters[0]
	e.res.WantDown = true
	if err := e.before(ctx, m); err != nil {
		return err
	}
	good := e.leaderBody(m)
	for _, b := range badStates {
		from := m.Requests()
		b.apply(m, good)
		if err := waitRequests(ctx, m, from, badPolls, e.hist.window*badPolls+10*time.Second); err != nil {
			return err
		}
		m.SetStatus(0)
		e.step("%s: %d polls", b.what, badPolls)
	}
	return e.recover(ctx, m, "a good, changed state after the bad ones", nil)
}

// runSlow: the leader answers slower than state_timeout while the
// other master redirects to it (no master can serve), then the other
// master is elected and must be followed while the first stays slow.
func runSlow(ctx context.Context, e *env) error {
	slow, other := e.masters[0], e.masters[1]
	e.res.WantDown = true
	if err := e.before(ctx, slow); err != nil {
		return err
	}
	delay := slowDelay(e.cfg)
	slow.SetDelay(delay)
	e.step("%s (the leader) answers after %s, over the state_timeout; %s redirects to it, for %s", slow.Addr(), delay, other.Addr(), e.cfg.Fault)
	_ = toolflags.SleepCtx(ctx, e.cfg.Fault)
	e.step("%s elected, with a changed state; %s still slow", other.Addr(), slow.Addr())
	err := e.recover(ctx, other, "the second master, elected while the first is slow", func() error {
		other.SetLeader("")
		slow.SetLeader(other.Addr())
		return nil
	})
	slow.SetDelay(0)
	return err
}

// slowDelay is how long the slow master takes to answer: over the
// state_timeout.
func slowDelay(cfg *Config) time.Duration { return cfg.StateTimeout + time.Second }

func slowCriteria(e *env) []criterion {
	return append(e.commonCriteria(), e.pollsCriterion(slowDelay(e.cfg)))
}

// runFailover: the leader goes down. With the masters list, the
// second master answers 503 (no leader) for two polls, then leads with the
// same tasks and changes. With ZooKeeper, the plugin asks only the leader
// ZooKeeper names: two refreshes later the second master leads and the
// first's znode is removed, as its session ends, which the plugin must
// follow at once.
func runFailover(ctx context.Context, e *env) error {
	first, second := e.masters[0], e.masters[1]
	e.res.WantDown = true
	if err := e.before(ctx, first); err != nil {
		return err
	}
	if e.zk != nil {
		if err := first.SetDown(true); err != nil {
			return err
		}
		e.step("%s (the leader) down, its znode still there", first.Addr())
		_ = toolflags.SleepCtx(ctx, 2*e.cfg.Refresh)
		e.step("after %s, %s leads with the same tasks and changes, and %s's znode is removed", 2*e.cfg.Refresh, second.Addr(), first.Addr())
		err := e.recover(ctx, second, "the second master, leading, named by ZooKeeper", func() error {
			second.SetLeader("")
			member := e.members[0]
			e.members = e.members[1:]
			return member.Remove()
		})
		return errors.Join(err, e.rejoin(first, second))
	}
	second.SetLeader(mesosmaster.NoLeader)
	if err := first.SetDown(true); err != nil {
		return err
	}
	e.step("%s (the leader) down; %s answers 503 (no leader elected)", first.Addr(), second.Addr())
	if err := waitRequests(ctx, second, second.Requests(), 2, e.hist.window*2+10*time.Second); err != nil {
		return err
	}
	e.step("after 2 polls of %s (503), it leads with the same tasks and changes", second.Addr())
	err := e.recover(ctx, second, "the second master, leading", func() error { second.SetLeader(""); return nil })
	return errors.Join(err, e.rejoin(first, second))
}

// rejoin brings the first master back as a follower of the second, as a
// restarted master comes back.
func (e *env) rejoin(first, second *mesosmaster.Master) error {
	first.SetLeader(second.Addr())
	return first.SetDown(false)
}

// runZKDown: ZooKeeper is killed while the masters are fine: the
// plugin must keep polling the last leader ZooKeeper named and serve the
// tasks' changes throughout, with no outage; ZooKeeper then comes back.
func runZKDown(ctx context.Context, e *env) error {
	m := e.masters[0]
	if err := e.before(ctx, m); err != nil {
		return err
	}
	if err := e.zk.Kill(); err != nil {
		return err
	}
	e.step("ZooKeeper killed for %s, the tasks changing on %s (the leader) meanwhile", e.cfg.Fault, m.Addr())
	if err := e.churn(ctx, m, e.cfg.Fault); err != nil {
		return err
	}
	start := time.Now()
	if err := e.zk.Restart(ctx); err != nil {
		return err
	}
	e.step("ZooKeeper started again (ready in %s)", time.Since(start).Round(100*time.Millisecond))
	return e.recover(ctx, m, "a changed state once ZooKeeper is back", nil)
}

// zkDownCriteria: no wrong answer, the changes served during the outage
// as before it, nothing logged about the masters, ZooKeeper's loss and
// return logged once each.
func zkDownCriteria(e *env) []criterion {
	r := e.res
	f := r.FaultChanges
	return []criterion{e.noWrong(), e.noEarlyOutage(), e.reachable(),
		{"no outage of the masters logged", fmt.Sprintf("%d on, %d off", r.Logs["outage"], r.Logs["recovery"]), r.Logs["outage"] == 0},
		{"ZooKeeper's loss logged once, its return once", fmt.Sprintf("%d lost, %d back", r.Logs["zk-lost"], r.Logs["zk-back"]),
			r.Logs["zk-lost"] == 1 && r.Logs["zk-back"] == 1},
		{"the changes during the outage served within the staleness allowed", fmt.Sprintf("%d states, the slowest %.0f ms (%d skipped)", f.N, f.Max, r.FaultUnseen),
			f.N > 0 && f.Max <= r.WindowSeconds*1000},
		e.servedAfter(), e.noPanic()}
}

// runHandover: the leader steps down without going away: both
// masters answer 503 (an election) for two polls, then the second leads
// and the first redirects (307) to it. The plugin asks the first, the last
// leader, and must follow its redirect.
func runHandover(ctx context.Context, e *env) error {
	first, second := e.masters[0], e.masters[1]
	e.res.WantDown = true
	if err := e.before(ctx, first); err != nil {
		return err
	}
	first.SetLeader(mesosmaster.NoLeader)
	second.SetLeader(mesosmaster.NoLeader)
	e.step("%s (the leader) steps down: both masters answer 503 (no leader elected)", first.Addr())
	if err := waitRequests(ctx, first, first.Requests(), 2, e.hist.window*2+10*time.Second); err != nil {
		return err
	}
	e.step("after 2 polls, %s leads with the same tasks and changes; %s redirects (307) to it", second.Addr(), first.Addr())
	from := first.Requests()
	err := e.recover(ctx, second, "the second master, leading, reached through the first's redirect", func() error {
		second.SetLeader("")
		first.SetLeader(second.Addr())
		return nil
	})
	e.step("%s answered %d requests after the election (the redirect the plugin followed)", first.Addr(), first.Requests()-from)
	return err
}

func failoverCriteria(e *env) []criterion { return append(e.commonCriteria(), e.leaderMoved()) }

// runNoAgents: the leader goes down and the second master leads at
// once with a state that lists no agent (they have not registered again)
// for two polls, then with the agents and their tasks, changed.
func runNoAgents(ctx context.Context, e *env) error {
	first, second := e.masters[0], e.masters[1]
	if err := e.before(ctx, first); err != nil {
		return err
	}
	held0 := e.pollResult("held")
	second.SetStateOf(e.cluster.agentless())
	second.SetLeader("")
	from := second.Requests()
	if err := first.SetDown(true); err != nil {
		return err
	}
	e.step("%s (the leader) down; %s leads at once, listing its frameworks but no agent and no task", first.Addr(), second.Addr())
	if err := waitRequests(ctx, second, from, 2, e.hist.window*2+10*time.Second); err != nil {
		return err
	}
	e.step("after 2 polls of %s, the agents are back (with changes)", second.Addr())
	err := e.recover(ctx, second, "the agents back on the new leader", nil)
	e.res.Held = e.pollResult("held") - held0
	return err
}

func noAgentsCriteria(e *env) []criterion {
	return append(e.commonCriteria(), criterion{
		What:   "the agentless state held back (2 polls), then the agents served",
		Result: fmt.Sprintf("%.0f polls held, %d log line", e.res.Held, e.res.Logs["held"]),
		OK:     e.res.Held >= 2 && e.res.ServeSeconds >= 0 && e.res.Logs["held"] == 1,
	})
}

// pollResult is the server's count of polls with result.
func (e *env) pollResult(result string) float64 {
	v, _ := e.srv.Metric("coredns_mesosschema_polls_total", `result="`+result+`"`)
	if len(v) == 0 {
		return 0
	}
	return v[0]
}
