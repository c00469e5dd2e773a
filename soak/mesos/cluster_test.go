package mesos

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
	"github.com/schemadns/schemadns/soak/observe"
)

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
	c := &cluster{checked: map[appKey]bool{{0, "web-app"}: true, {0, "api"}: true}, st: &mesosstate.State{
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
	c := newCluster(300, 1)
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
		if m := got[queryKey(c.markerName(), dns.TypeA)]; m != observe.Nth(markerBase, uint32(n)).String() {
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
