package mesosschema

import (
	"bytes"
	golog "log"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/internal/zookeeper"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// value is a counter's or a gauge's value.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// settle bounds how long a change may take to be served.
const settle = 10 * time.Second

// logBuffer collects CoreDNS's log while a test runs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func captureLog(t *testing.T) *logBuffer {
	b := &logBuffer{}
	golog.SetOutput(b)
	t.Cleanup(func() { golog.SetOutput(os.Stderr) })
	return b
}

// startMaster runs a stand-in master serving st, as the leader.
func startMaster(t *testing.T, opts mesosmaster.Options) *mesosmaster.Master {
	t.Helper()
	m, err := mesosmaster.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// startPlugin runs the plugin against masters, polling every 50 ms, and
// waits for its first state.
func startPlugin(t *testing.T, configure func(*Mesosschema), masters ...string) *Mesosschema {
	t.Helper()
	m := newMesosschema()
	m.Zones = []string{"mesos.", "in-addr.arpa."}
	m.master.Masters, m.gen.masters = masters, masters
	m.master.Timeout = 2 * time.Second
	m.refresh = 50 * time.Millisecond
	m.startupTimeout = settle
	if configure != nil {
		configure(m)
	}
	if err := m.complete(); err != nil {
		t.Fatal(err)
	}
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.shutdown() })
	if !m.Ready() {
		t.Fatal("not ready after the startup timeout")
	}
	return m
}

// eventually polls cond until it holds, or fails the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", settle, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func addrsAnswered(t *testing.T, m *Mesosschema, name string) string {
	t.Helper()
	var out []string
	for _, rr := range ask(t, m, name, dns.TypeA).Answer {
		out = append(out, rr.(*dns.A).A.String())
	}
	slices.Sort(out) // rotated
	return strings.Join(out, ",")
}

func smallState() *mesosstate.State {
	st := specState()
	st.Frameworks = st.Frameworks[:1]
	return st
}

// TestPollUnchanged: polls of an unchanged state are counted, never
// decoded or published: the snapshot and its serial stay.
func TestPollUnchanged(t *testing.T) {
	master := startMaster(t, mesosmaster.Options{State: smallState()})
	m := startPlugin(t, nil, master.Addr())
	first := m.Snapshot()
	before := value(metrics.polls.WithLabelValues("unchanged"))
	eventually(t, "five unchanged polls", func() bool {
		return value(metrics.polls.WithLabelValues("unchanged")) >= before+5
	})
	if m.Snapshot() != first {
		t.Error("an unchanged state published a snapshot")
	}
	// The same records in other bytes: decoded, and still nothing published.
	st := smallState()
	st.Frameworks[0].Tasks[0].Statuses = append(st.Frameworks[0].Tasks[0].Statuses, mesosstate.Status{State: "TASK_RUNNING", Timestamp: 1800000000})
	states := value(metrics.unchangedStates)
	master.SetStateOf(st)
	eventually(t, "the new bytes read", func() bool { return value(metrics.unchangedStates) > states })
	if m.Snapshot() != first {
		t.Error("a state that changes no record published a snapshot")
	}
}

// TestPollChanges: a task that starts is served after the next poll, with
// its programming latency observed; one that stops is gone.
func TestPollChanges(t *testing.T) {
	st := smallState()
	master := startMaster(t, mesosmaster.Options{State: st})
	m := startPlugin(t, nil, master.Addr())
	if got := addrsAnswered(t, m, "ct.marathon.mesos"); got != "172.17.0.2" {
		t.Fatalf("ct.marathon.mesos = %q", got)
	}
	st.Frameworks[0].Tasks = append(st.Frameworks[0].Tasks, mesosstate.Task{ID: "new.1", Name: "new", SlaveID: agent2,
		State: "TASK_RUNNING", Statuses: withNetinfo("172.17.0.9")})
	st.Frameworks[0].Tasks[2].State = "TASK_KILLED" // ct
	master.SetStateOf(st)
	eventually(t, "the new task served", func() bool { return addrsAnswered(t, m, "new.marathon.mesos") == "172.17.0.9" })
	if r := ask(t, m, "ct.marathon.mesos", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("the killed task still answers: %v", r.Answer)
	}
}

// TestPollOutage: a master that goes down, answers 500, or serves a
// truncated or malformed state leaves the zone as it was; the outage is
// logged once, the gauge says it, and the next good state is served.
func TestPollOutage(t *testing.T) {
	logs := captureLog(t)
	st := smallState()
	master := startMaster(t, mesosmaster.Options{State: st})
	m := startPlugin(t, nil, master.Addr())
	good := m.Snapshot()
	body := mesosstatetest.Marshal(st)
	faults := []struct {
		name  string
		apply func()
	}{
		{"down", func() { _ = master.SetDown(true) }},
		{"500", func() { _ = master.SetDown(false); master.SetStatus(500) }},
		{"truncated", func() { master.SetStatus(0); master.SetState(body[:len(body)/2]) }},
		{"malformed", func() { master.SetState(bytes.Replace(body, []byte(`"frameworks":[`), []byte(`"frameworks":{`), 1)) }},
		{"empty object", func() { master.SetState([]byte("{}")) }},
	}
	for _, f := range faults {
		errors := value(metrics.polls.WithLabelValues("error"))
		f.apply()
		eventually(t, f.name+": three failed polls", func() bool {
			return value(metrics.polls.WithLabelValues("error")) >= errors+3
		})
		if m.Snapshot() != good || value(metrics.reachable) != 0 {
			t.Errorf("%s: the snapshot changed or the master is said reachable", f.name)
		}
		if got := addrsAnswered(t, m, "search.marathon.mesos"); got != "10.0.0.1,10.0.0.2" {
			t.Errorf("%s: search.marathon.mesos = %q, want the last good state's", f.name, got)
		}
	}
	if n := logs.count("no master gives a good state"); n != 1 {
		t.Errorf("%d log lines for one outage, want 1:\n%s", n, logs.buf.String())
	}
	for line := range strings.SplitSeq(strings.TrimSpace(logs.buf.String()), "\n") {
		if !strings.Contains(line, "plugin/mesosschema:") {
			t.Errorf("a log line without the plugin's prefix (a message over several lines): %q", line)
		}
	}
	st.Frameworks[0].Tasks = st.Frameworks[0].Tasks[:1]
	master.SetStateOf(st)
	eventually(t, "the good state after the outage", func() bool { return addrsAnswered(t, m, "search.marathon.mesos") == "10.0.0.1" })
	if value(metrics.reachable) != 1 || logs.count("gives a good state again") != 1 {
		t.Errorf("after the outage: reachable %v, log:\n%s", value(metrics.reachable), logs.buf.String())
	}
}

// TestFailover: the leader goes down and the second master takes over:
// the plugin follows, leader.mesos moves, and no poll empties the zone.
func TestFailover(t *testing.T) {
	st := smallState()
	a := startMaster(t, mesosmaster.Options{Listen: "127.0.0.2:0", State: st})
	b := startMaster(t, mesosmaster.Options{Listen: "127.0.0.3:0", Leader: a.Addr()})
	m := startPlugin(t, nil, b.Addr(), a.Addr()) // b, not leading, redirects to a
	if got := addrsAnswered(t, m, "leader.mesos"); got != "127.0.0.2" {
		t.Fatalf("leader.mesos = %q, want a's address", got)
	}
	_ = a.SetDown(true)
	b.SetLeader("")
	b.SetStateOf(st)
	eventually(t, "leader.mesos moved to b", func() bool { return addrsAnswered(t, m, "leader.mesos") == "127.0.0.3" })
	if got := addrsAnswered(t, m, "search.marathon.mesos"); got != "10.0.0.1,10.0.0.2" {
		t.Errorf("search.marathon.mesos after the failover = %q", got)
	}
}

// TestNewLeaderWithoutAgents: a newly elected master lists no agent until
// they register again; its state is held back for holdPolls polls, then
// served if it stays so.
func TestNewLeaderWithoutAgents(t *testing.T) {
	st := smallState()
	master := startMaster(t, mesosmaster.Options{State: st})
	m := startPlugin(t, nil, master.Addr())
	held := value(metrics.polls.WithLabelValues("held"))
	empty := &mesosstate.State{Frameworks: []mesosstate.Framework{{Name: "marathon"}}}
	master.SetStateOf(empty)
	eventually(t, "the empty state served after the hold", func() bool { return addrsAnswered(t, m, "slave.mesos") == "" })
	if got := value(metrics.polls.WithLabelValues("held")) - held; got != holdPolls {
		t.Errorf("%v polls held, want %d", got, holdPolls)
	}
}

// TestZooKeeperLeader: with zk alone, the leader is the master ZooKeeper's
// election names (a real ZooKeeper, masters registered as Mesos does);
// when it leaves the election, the next leader is polled at once, well
// before the refresh interval.
func TestZooKeeperLeader(t *testing.T) {
	zk := zookeeper.StartTest(t)
	st := smallState()
	a := startMaster(t, mesosmaster.Options{Listen: "127.0.0.2:0", State: st})
	b := startMaster(t, mesosmaster.Options{Listen: "127.0.0.3:0", Leader: a.Addr()})
	register := func(m *mesosmaster.Master) *zookeeper.Master {
		host, port, _ := net.SplitHostPort(m.Addr())
		p, _ := strconv.Atoi(port)
		reg, err := zk.RegisterMaster("/mesos", zookeeper.MasterInfo{IP: host, Port: p})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	regA := register(a)
	register(b)
	m := startPlugin(t, func(m *Mesosschema) {
		m.master.ZK = zk.URL("/mesos")
		m.refresh = time.Hour // only ZooKeeper's news can make it poll again
	})
	if got := addrsAnswered(t, m, "leader.mesos"); got != "127.0.0.2" {
		t.Fatalf("leader.mesos = %q, want a's address", got)
	}
	b.SetLeader("")
	b.SetStateOf(st)
	_ = a.SetDown(true)
	if err := regA.Remove(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "leader.mesos moved to b", func() bool { return addrsAnswered(t, m, "leader.mesos") == "127.0.0.3" })
	if got := addrsAnswered(t, m, "master.mesos"); got != "127.0.0.3" {
		t.Errorf("master.mesos = %q: with zk alone, the leader is the one master known", got)
	}
}

// TestRedirectRefusedCounted: a master that redirects to a host the
// stanza does not name is not followed: the poll fails, the zone keeps
// its last good state, and coredns_mesosschema_redirects_refused_total
// counts it.
func TestRedirectRefusedCounted(t *testing.T) {
	logs := captureLog(t)
	master := startMaster(t, mesosmaster.Options{State: smallState()})
	stranger := startMaster(t, mesosmaster.Options{State: smallState()})
	m := startPlugin(t, nil, master.Addr())
	before := value(metrics.redirectsRefused)
	master.SetLeader(stranger.Addr())
	eventually(t, "a refused redirect counted", func() bool { return value(metrics.redirectsRefused) > before })
	eventually(t, "the refusal logged", func() bool { return logs.count("not a known master") > 0 })
	if stranger.Requests() != 0 || !m.Ready() {
		t.Errorf("the unknown host was asked %d times; ready %t", stranger.Requests(), m.Ready())
	}
}
