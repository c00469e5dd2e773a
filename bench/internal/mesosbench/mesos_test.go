package mesosbench

import (
	"bytes"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// smallState is M1 at a tenth, led by the master at 127.0.0.1:5050.
func smallState(t *testing.T) *mesosstate.State {
	t.Helper()
	return ledBy(mesosstatetest.Generate(tenth(mesosstatetest.BenchShape)), "127.0.0.1:5050")
}

// Each scale has M1 and M2, M2 the worst case only, the small scale a
// tenth of the default one.
func TestMesosShapes(t *testing.T) {
	for i, def := range ShapesAt["default"] {
		small := ShapesAt["small"][i]
		if def.Name != small.Name || def.Worst != small.Worst || def.Worst != (def.Name == "M2") {
			t.Errorf("shape %d: %s (worst %v) and %s (worst %v)", i, def.Name, def.Worst, small.Name, small.Worst)
		}
		if small.Gen.Tasks*10 != def.Gen.Tasks || small.Gen.Agents*10 != def.Gen.Agents || small.Gen.Frameworks*10 != def.Gen.Frameworks {
			t.Errorf("%s small: %+v is not a tenth of %+v", small.Name, small.Gen, def.Gen)
		}
	}
	if got := ShapesAt["default"][0].Describe(); !strings.Contains(got, "10k running tasks") || !strings.Contains(got, "100 frameworks on 500 agents") {
		t.Errorf("M1 described as %q", got)
	}
}

// The state names the tap as its leader, so that a server polling the tap
// does not go round it to the master.
func TestLedBy(t *testing.T) {
	base := mesosstatetest.Generate(tenth(mesosstatetest.BenchShape))
	st, err := mesosstate.Decode(mesosstatetest.Marshal(ledBy(base, "127.0.0.1:4242")))
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader != "master@127.0.0.1:4242" || st.PID != st.Leader || st.LeaderInfo.Address.IP != "127.0.0.1" || st.LeaderInfo.Port != 4242 {
		t.Errorf("leader %q, pid %q, leader_info %+v", st.Leader, st.PID, st.LeaderInfo)
	}
	if base.Leader == st.Leader {
		t.Error("ledBy changed the state it was given")
	}
}

// taskIDs are the IDs of the running tasks of st.
func taskIDs(st *mesosstate.State) map[string]bool {
	out := map[string]bool{}
	for _, fw := range st.Frameworks {
		for _, task := range fw.Tasks {
			if task.Running() {
				out[task.ID] = true
			}
		}
	}
	return out
}

// replace changes exactly n running tasks, leaves the state it was given
// as it was, and its probe names a replaced task's instance with its
// address.
func TestReplace(t *testing.T) {
	base := smallState(t)
	before := mesosstatetest.Marshal(base)
	m := newMutator(mesosZone, 1)
	for _, n := range []int{1, 100} {
		st, p := m.replace(base, n)
		if !bytes.Equal(mesosstatetest.Marshal(base), before) {
			t.Fatalf("replace %d changed the base state", n)
		}
		old, now := taskIDs(base), taskIDs(st)
		gone, added := 0, 0
		for id := range old {
			if !now[id] {
				gone++
			}
		}
		for id := range now {
			if !old[id] {
				added++
			}
		}
		if gone != n || added != n || factsOf(st) != factsOf(base) {
			t.Errorf("replace %d: %d tasks gone, %d added, facts %+v (base %+v)", n, gone, added, factsOf(st), factsOf(base))
		}
		found := false
		for _, ref := range namedRunning(st) {
			fw := &st.Frameworks[ref.fw]
			task := &fw.Tasks[ref.task]
			if old[task.ID] {
				continue
			}
			if q, ok := m.probeOf(task, fw, st.Slaves); ok && q == p {
				found = true
			}
		}
		if !found || !p.addr.Is4() || !strings.HasSuffix(p.name, "."+mesosZone) {
			t.Errorf("replace %d: probe %+v is not a replaced task's instance with an IPv4 address", n, p)
		}
	}
	// Every change has a probe, also when the task it picks first has no
	// IPv4 address (no container network, an IPv6 agent).
	st := base
	for i := range 50 {
		var p probe
		if st, p = m.replace(st, 1); p.name == "" {
			t.Fatalf("change %d of one task: no probe", i)
		}
	}
	// Changes build on each other, and their addresses do not repeat.
	a, pa := m.replace(base, 1)
	_, pb := m.replace(a, 1)
	if pa.addr == pb.addr || pa.name == pb.name {
		t.Errorf("two changes made the same probe: %+v, %+v", pa, pb)
	}
}

// touch changes the bytes, not the tasks, and not the base.
func TestTouch(t *testing.T) {
	base := smallState(t)
	before := mesosstatetest.Marshal(base)
	a, b := mesosstatetest.Marshal(touch(base, 1)), mesosstatetest.Marshal(touch(base, 2))
	if bytes.Equal(a, before) || bytes.Equal(a, b) || !bytes.Equal(mesosstatetest.Marshal(base), before) {
		t.Fatal("touch: the bodies do not differ, or the base changed")
	}
	if len(a) != len(before) {
		t.Errorf("touch changed the length: %d, was %d (only a timestamp should move)", len(a), len(before))
	}
	st, err := mesosstate.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	if !mapsEqual(taskIDs(st), taskIDs(base)) {
		t.Error("touch changed the running tasks")
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// axfr is the records of a transfer of the names of names: A records
// (AAAA for those in v6), SRV for the SRV names, opened and closed by the
// SOA.
func axfr(t *testing.T, names mesosNames, v6 map[string]bool) []dns.RR {
	t.Helper()
	rr := func(s string) dns.RR {
		r, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	soa := rr("mesos. 60 IN SOA ns1.mesos. root.ns1.mesos. 1 60 600 86400 60")
	out := []dns.RR{soa}
	for _, list := range [][]string{names.tasks, names.instances, names.slaves} {
		for _, n := range list {
			if v6[n] {
				out = append(out, rr(n+" 60 IN AAAA fd00::1"))
			} else {
				out = append(out, rr(n+" 60 IN A 10.0.0.1"))
			}
		}
	}
	for _, n := range names.srvs {
		out = append(out, rr(n+" 60 IN SRV 0 1 31000 x.mesos."))
	}
	return append(out, soa)
}

// The mix asks the state's names the zone holds, for A where they have
// one, and misses that are not in the zone.
func TestMesosMix(t *testing.T) {
	st := smallState(t)
	everything := namesOf(st, func(string, uint16) bool { return true })
	if everything.expected == 0 || everything.found != everything.expected {
		t.Fatalf("names of the state: %d found of %d", everything.found, everything.expected)
	}
	// A zone without one task name, with one slave name IPv6 only.
	missing, v6 := everything.tasks[0], map[string]bool{everything.slaves[0]: true}
	partial := everything
	partial.tasks = everything.tasks[1:]
	z, err := newZone(axfr(t, partial, v6))
	if err != nil {
		t.Fatal(err)
	}
	names := namesOf(st, z.has)
	if names.found != names.expected-1 || len(names.tasks) != len(everything.tasks)-1 {
		t.Errorf("found %d of %d names, %d tasks; want all but %s", names.found, names.expected, len(names.tasks), missing)
	}
	mix, err := mesosMix(names, z)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, q := range querymix.Generate(mix, 5000) {
		kinds[q.Kind]++
		switch {
		case q.Name == missing:
			t.Errorf("%s: the mix asks %s, which the zone lacks", q.Kind, q.Name)
		case q.Expect == "nxdomain" && z.types[q.Name] != nil:
			t.Errorf("%s: %s is in the zone", q.Kind, q.Name)
		case q.Expect == "answer" && !z.has(q.Name, q.Qtype):
			t.Errorf("%s: %s %s has no records", q.Kind, q.Name, dns.TypeToString[q.Qtype])
		case q.Name == everything.slaves[0] && q.Qtype != dns.TypeAAAA:
			t.Errorf("%s: the IPv6 agent's name asked for %s", q.Kind, dns.TypeToString[q.Qtype])
		}
	}
	if len(kinds) != len(mix) {
		t.Errorf("kinds drawn: %v; want each of the %d", kinds, len(mix))
	}
}

func TestNewZone(t *testing.T) {
	soa, _ := dns.NewRR("mesos. 60 IN SOA ns1.mesos. root.ns1.mesos. 1 60 600 86400 60")
	a, _ := dns.NewRR("Web.Marathon.mesos. 60 IN A 10.0.0.1")
	z, err := newZone([]dns.RR{soa, a, soa})
	if err != nil || len(z.rrs) != 2 || !z.has("web.marathon.mesos.", dns.TypeA) || z.has("web.marathon.mesos.", dns.TypeAAAA) {
		t.Fatalf("newZone: %v, %d records", err, len(z.rrs))
	}
	if _, err := newZone([]dns.RR{a, soa}); err == nil {
		t.Error("a transfer not opened by the SOA: no error")
	}
	path := filepath.Join(t.TempDir(), "zone")
	if err := z.write(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if lines := strings.Count(string(b), "\n"); lines != 2 || !strings.HasPrefix(string(b), "mesos.\t60\tIN\tSOA") {
		t.Errorf("zone file of %d lines:\n%s", lines, b)
	}
}

// The tap forwards a poll to the master as it came (gzip when asked),
// runs the hook before, and records the poll with the gzipped length.
func TestStandIn(t *testing.T) {
	si, err := startStandIn()
	if err != nil {
		t.Fatal(err)
	}
	defer si.close()
	body := mesosstatetest.Marshal(ledBy(mesosstatetest.Generate(mesosstatetest.GenOptions{Seed: 1, Tasks: 50, Frameworks: 2, Agents: 3}), si.addr))
	gz, err := si.serve(body)
	if err != nil || gz <= 0 || gz >= len(body) {
		t.Fatalf("serve: gzipped %d of %d bytes, %v", gz, len(body), err)
	}
	if again, _ := si.serve(body); again != gz {
		t.Errorf("serving the same body again: %d bytes, was %d", again, gz)
	}
	hooked := 0
	si.setHook(func() pollSample { hooked++; return pollSample{cpu: 1.5} })
	resp, err := http.Get("http://" + si.addr + "/master/state") // the client asks for gzip and decompresses
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, body) {
		t.Errorf("the tap's answer: %d bytes, want the %d served", len(got), len(body))
	}
	ev, err := si.next(t.Context(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if hooked != 1 || ev.sample.cpu != 1.5 || ev.length != gz || ev.status != http.StatusOK ||
		ev.answered.Before(ev.arrived) || ev.done.Before(ev.answered) {
		t.Errorf("event %+v, hook called %d times; want the gzipped length %d, times in order", ev, hooked, gz)
	}
	if _, err := si.next(t.Context(), 10*time.Millisecond); err == nil {
		t.Error("an event without a poll")
	}
	if _, err := mesosstate.Decode(got); err != nil {
		t.Error(err)
	}
	if ap := netip.MustParseAddrPort(si.addr); !ap.Addr().IsLoopback() {
		t.Errorf("tap on %s", si.addr)
	}
}

// A series' figures are the growth between the samples at its ends.
func TestTally(t *testing.T) {
	at := time.Now()
	first := pollEvent{arrived: at, sample: pollSample{cpu: 10, idle: 2, serial: 5, metrics: map[string]float64{
		`coredns_mesosschema_polls_total{result="changed"}`: 3, `coredns_mesosschema_polls_total{result="unchanged"}`: 1,
		"coredns_mesosschema_poll_duration_seconds_sum": 1, "coredns_mesosschema_poll_duration_seconds_count": 4,
	}}}
	last := pollEvent{arrived: at.Add(25 * time.Second), sample: pollSample{cpu: 11.2, idle: 2.2, serial: 5, metrics: map[string]float64{
		`coredns_mesosschema_polls_total{result="changed"}`: 3, `coredns_mesosschema_polls_total{result="unchanged"}`: 21,
		"coredns_mesosschema_states_unchanged_total":    0,
		"coredns_mesosschema_poll_duration_seconds_sum": 2, "coredns_mesosschema_poll_duration_seconds_count": 24,
	}}}
	got := tally(seriesSpec{kind: PollUnchanged, what: "same"}, 20, first, last)
	if got.Seconds != 25 || got.Results["unchanged"] != 20 || len(got.Results) != 1 || got.PollSeconds != 0.05 ||
		got.SerialBefore != got.SerialAfter || got.Polls != 20 {
		t.Errorf("tally: %+v", got)
	}
	if ms := got.PerPollMs(); ms < 49.99 || ms > 50.01 { // (1.2 s − 0.2 s idle) / 20
		t.Errorf("CPU per poll: %.3f ms, want 50", ms)
	}
}

// The poll series serve, after one task, 1% and then -mesos-replace's
// share of the running tasks replaced, each body against the base one.
func TestSeriesShares(t *testing.T) {
	base := smallState(t)
	r := &mesosRun{Env: &Env{Opts: Config{Replace: 0.1}}, mr: &Result{State: factsOf(base)},
		base: base, body: mesosstatetest.Marshal(base)}
	running := factsOf(base).Running
	want := map[string]int{PollOne: 1, pollPercent: (running + 50) / 100, pollMany: (running + 5) / 10}
	var kinds []string
	for _, spec := range r.seriesSpecs() {
		kinds = append(kinds, spec.kind)
		n, ok := want[spec.kind]
		if !ok {
			continue
		}
		st, err := mesosstate.Decode(spec.bodies[1])
		if err != nil {
			t.Fatal(err)
		}
		old, now := taskIDs(base), taskIDs(st)
		gone := 0
		for id := range old {
			if !now[id] {
				gone++
			}
		}
		if gone != n {
			t.Errorf("%s: %d of %d running tasks replaced, want %d", spec.kind, gone, running, n)
		}
	}
	if got := strings.Join(kinds, ","); got != "unchanged,same-records,one-task,one-percent,many-tasks" {
		t.Errorf("series %s", got)
	}
}
