package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
	"github.com/schemadns/schemadns/test/mesosmaster"
)

// reply is a NOERROR answer to name holding records, or NXDOMAIN when
// there are none.
func reply(name string, qtype uint16, records ...dns.RR) *dns.Msg {
	r := new(dns.Msg)
	r.SetQuestion(name, qtype)
	r.Response = true
	r.Answer = records
	if len(records) == 0 {
		r.Rcode = dns.RcodeNameError
	}
	return r
}

func aRecord(name, ip string) dns.RR {
	return &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.ParseIP(ip)}
}

// TestHistoryJudge: an answer must be one state's records, whole; a state
// replaced longer than the window before the query is too old; a state
// older than one shown before the query left is a regression; an empty
// answer where every state allowed has records is wrong.
func TestHistoryJudge(t *testing.T) {
	const name = "web.marathon.mesos."
	key := queryKey(name, dns.TypeA)
	h := newHistory(5 * time.Second)
	h.setPhase(phaseBefore)
	base := time.Now()
	set := func(n int, begin, visible time.Duration) {
		h.states[n].begin, h.states[n].visible = base.Add(begin), base.Add(visible)
	}
	h.begin(map[string]string{key: "10.0.0.1,10.0.0.2"})
	set(0, 0, 0)
	h.begin(map[string]string{key: "10.0.0.1,10.0.0.3"})
	set(1, 10*time.Second, 10*time.Second)
	h.begin(map[string]string{})
	set(2, 20*time.Second, 20*time.Second)
	c := h.byKey[key]
	at := func(d time.Duration) time.Time { return base.Add(d) }
	cases := []struct {
		what       string
		ips        []string
		sent, got  time.Duration
		wantWrong  bool
		wantReason string
	}{
		{"state 0", []string{"10.0.0.2", "10.0.0.1"}, time.Second, time.Second, false, ""},
		{"a mix of states 0 and 1", []string{"10.0.0.2", "10.0.0.3"}, 11 * time.Second, 11 * time.Second, true, "of no state"},
		{"state 1 before it began", []string{"10.0.0.1", "10.0.0.3"}, 9 * time.Second, 9 * time.Second, true, "of no state"},
		{"state 0 within the window after state 1", []string{"10.0.0.1", "10.0.0.2"}, 10500 * time.Millisecond, 10500 * time.Millisecond, false, ""},
		{"state 1", []string{"10.0.0.3", "10.0.0.1"}, 12 * time.Second, 12 * time.Second, false, ""},
		{"state 0 after state 1 was shown", []string{"10.0.0.1", "10.0.0.2"}, 12500 * time.Millisecond, 12500 * time.Millisecond, true, "shown after"},
		{"state 1 within the window after state 2", []string{"10.0.0.1", "10.0.0.3"}, 24 * time.Second, 24 * time.Second, false, ""},
		{"NXDOMAIN in state 2", nil, 24500 * time.Millisecond, 24500 * time.Millisecond, false, ""},
		{"state 1 too long after state 2", []string{"10.0.0.1", "10.0.0.3"}, 26 * time.Second, 26 * time.Second, true, "replaced more than"},
	}
	for _, tc := range cases {
		var rrs []dns.RR
		for _, ip := range tc.ips {
			rrs = append(rrs, aRecord(name, ip))
		}
		r := reply(name, dns.TypeA, rrs...)
		v, ok := answerCanonical(r)
		why := h.verdict(c, r, v, ok, at(tc.sent), at(tc.got))
		if (why != "") != tc.wantWrong || !strings.Contains(why, tc.wantReason) {
			t.Errorf("%s: verdict %q, want wrong %v (%q)", tc.what, why, tc.wantWrong, tc.wantReason)
		}
	}
	empty := newHistory(time.Second)
	empty.begin(map[string]string{key: "10.0.0.1"})
	empty.visible(0)
	r := reply(name, dns.TypeA)
	if why := empty.verdict(empty.byKey[key], r, "", true, time.Now(), time.Now()); !strings.Contains(why, "no records") || empty.total.Empty != 1 {
		t.Errorf("NXDOMAIN for a name with records: verdict %q, %d empty", why, empty.total.Empty)
	}
	servfail := reply(name, dns.TypeA, aRecord(name, "10.0.0.1"))
	servfail.Rcode = dns.RcodeServerFailure
	if why := empty.verdict(empty.byKey[key], servfail, "", false, time.Now(), time.Now()); why == "" || empty.total.ServFail != 1 {
		t.Errorf("SERVFAIL: verdict %q, %d SERVFAIL", why, empty.total.ServFail)
	}
}

// TestExpect: the records the checker expects, on a state written by hand:
// only running tasks on known agents; the container's address before the
// agent's; instance names; SRV of host ports to the .slave instance, or of
// DiscoveryInfo ports to the instance; the leader.
func TestExpect(t *testing.T) {
	agent := mesosstate.Slave{ID: "abc-S1", PID: "slave(1)@10.1.0.1:5051"}
	web := mesosstate.Task{ID: "web.1", Name: "Web_App", SlaveID: agent.ID, State: "TASK_RUNNING",
		Resources: mesosstate.Resources{Ports: "[31000-31001]"},
		Statuses: []mesosstate.Status{{State: "TASK_RUNNING", ContainerStatus: &mesosstate.ContainerStatus{
			NetworkInfos: []mesosstate.NetworkInfo{{IPAddresses: []mesosstate.IPAddress{{IPAddress: "9.0.0.1"}}}}}}}}
	web2 := mesosstate.Task{ID: "web.2", Name: "Web_App", SlaveID: agent.ID, State: "TASK_RUNNING"}
	staging := mesosstate.Task{ID: "web.3", Name: "Web_App", SlaveID: agent.ID, State: "TASK_STAGING"}
	lost := mesosstate.Task{ID: "web.4", Name: "Web_App", SlaveID: "gone", State: "TASK_RUNNING"}
	api := mesosstate.Task{ID: "api.1", Name: "api", SlaveID: agent.ID, State: "TASK_RUNNING",
		Discovery: &mesosstate.DiscoveryInfo{Name: "api", Ports: mesosstate.DiscoveryPorts{Ports: []mesosstate.DiscoveryPort{
			{Number: 8080, Protocol: "tcp"}, {Number: 9090, Protocol: "udp"}, {Number: 7070}}}}}
	c := &mesosCluster{checked: map[appKey]bool{{0, "web-app"}: true, {0, "api"}: true}, st: &mesosstate.State{
		Slaves:     []mesosstate.Slave{agent},
		Frameworks: []mesosstate.Framework{{Name: "Marathon", Tasks: []mesosstate.Task{web, web2, staging, lost, api}}},
	}}
	w1 := mesosstate.InstanceLabel("web-app", "web.1", agent.ID) + ".marathon.mesos."
	w2 := mesosstate.InstanceLabel("web-app", "web.2", agent.ID) + ".marathon.mesos."
	a1 := mesosstate.InstanceLabel("api", "api.1", agent.ID) + ".marathon.mesos."
	want := map[string]string{
		"A leader.mesos.":                   "127.0.0.2",
		"A web-app.marathon.mesos.":         "10.1.0.1,9.0.0.1",
		"A " + w1:                           "9.0.0.1",
		"A " + w2:                           "10.1.0.1",
		"SRV _web-app._tcp.marathon.mesos.": canonical([]string{"31000 " + strings.Replace(w1, ".marathon.", ".marathon.slave.", 1), "31001 " + strings.Replace(w1, ".marathon.", ".marathon.slave.", 1)}),
		"A api.marathon.mesos.":             "10.1.0.1",
		"A " + a1:                           "10.1.0.1",
		"SRV _api._tcp.marathon.mesos.":     canonical([]string{"8080 " + a1, "7070 " + a1}),
	}
	got := c.expect(netip.MustParseAddr("127.0.0.2"))
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %q, not expected", k, got[k])
		}
	}
}

// TestClusterSteps: the states stay whole (each decodes), the hot apps
// change, the marker carries the state's number, and the checked names
// cover hot and cold apps.
func TestClusterSteps(t *testing.T) {
	c := newMesosCluster(300, 1)
	leader := netip.MustParseAddr("127.0.0.2")
	c.setMarker(0)
	first := c.expect(leader)
	names := map[string]bool{}
	for k := range first {
		names[k] = true
	}
	for n := 1; n <= 30; n++ {
		c.step()
		c.setMarker(n)
		if _, err := mesosstate.Decode(mesosstatetest.Marshal(c.st)); err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		got := c.expect(leader)
		if m := got[queryKey(c.markerName(), dns.TypeA)]; m != nth(markerBase, uint32(n)).String() {
			t.Fatalf("step %d: marker %q", n, m)
		}
		for k := range got {
			names[k] = true
		}
	}
	if len(c.hot) < minHot || len(first) < 100 {
		t.Errorf("%d hot apps, %d checked names at first", len(c.hot), len(first))
	}
	if len(names) <= len(first) {
		t.Errorf("no new name in 30 steps (%d, %d at first)", len(names), len(first))
	}
}

// TestBadStatesRejected: every bad state, served by a stand-in master, is
// one a client must refuse: not 200, a body that does not decode, or a
// state naming another leader than the master that served it.
func TestBadStatesRejected(t *testing.T) {
	m, err := mesosmaster.Start(mesosmaster.Options{Listen: "127.0.0.2:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := newMesosCluster(100, 1)
	e := &mesosEnv{cluster: c}
	good := e.leaderBody(m)
	if _, err := mesosstate.Decode(good); err != nil {
		t.Fatalf("the good body: %v", err)
	}
	for _, b := range badStates {
		b.apply(m, good)
		resp, err := http.Get(m.URL() + "/master/state")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m.SetStatus(0)
		if resp.StatusCode != http.StatusOK {
			continue
		}
		s, err := mesosstate.Decode(body)
		if err == nil && s.Leader == m.PID() {
			t.Errorf("%s: decodes, leader %s", b.what, s.Leader)
		}
	}
}

// TestSelectScenarios: groups expand, names add up, unknown names fail.
func TestSelectScenarios(t *testing.T) {
	cfg := &config{scenarios: "churn,mesos"}
	if err := cfg.selectScenarios(); err != nil {
		t.Fatal(err)
	}
	if !cfg.isSelected("churn") || cfg.isSelected("quiet") || !cfg.isSelected("mesos-slow") || !cfg.anySelected("kubernetes") {
		t.Errorf("selected %v", cfg.selected)
	}
	for _, bad := range []string{"mesos-nope", ""} {
		cfg := &config{scenarios: bad}
		if err := cfg.selectScenarios(); err == nil {
			t.Errorf("-scenarios %q accepted", bad)
		}
	}
	var names []string
	for _, s := range kubeScenarios(&env{}) {
		names = append(names, s.name)
	}
	if strings.Join(names, ",") != strings.Join(kubernetesScenarios, ",") {
		t.Errorf("kubeScenarios %v, kubernetesScenarios %v", names, kubernetesScenarios)
	}
}

// TestKeepOthers: a run of the Mesos scenarios alone keeps the Kubernetes
// results of the page, and the reverse; a run of both keeps nothing.
func TestKeepOthers(t *testing.T) {
	dir := t.TempDir()
	prev := &results{Command: "make soak", Churn: &churnResult{Rate: 5}, Mesos: &mesosResults{Command: "old mesos"}}
	raw, err := json.Marshal(prev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reliability.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(scenarios string, res *results) *results {
		cfg := &config{scenarios: scenarios}
		cfg.OutDir = dir
		if err := cfg.selectScenarios(); err != nil {
			t.Fatal(err)
		}
		return keepOthers(cfg, res)
	}
	got := run("mesos", &results{Command: "new", Mesos: &mesosResults{Command: "new mesos"}})
	if got.Churn == nil || got.Command != "make soak" || got.Mesos.Command != "new mesos" {
		t.Errorf("Mesos alone: %+v, Mesos %+v", got, got.Mesos)
	}
	got = run("churn", &results{Command: "new", Churn: &churnResult{Rate: 7}})
	if got.Churn.Rate != 7 || got.Mesos == nil || got.Mesos.Command != "old mesos" {
		t.Errorf("Kubernetes alone: %+v", got)
	}
	got = run("kubernetes,mesos", &results{Command: "new"})
	if got.Churn != nil || got.Mesos != nil {
		t.Errorf("both: %+v", got)
	}
}
