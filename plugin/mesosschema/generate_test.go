package mesosschema

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// The spec's cluster (specs/004): a leader, three agents (one IPv6), and
// tasks of every kind the SRV table and the naming rules tell apart.
const (
	agent1 = "20150525-034430-1-S1"
	agent2 = "20150525-034430-1-S2"
	agent6 = "20150525-034430-1-S6"
)

func runningAt(ts float64) []mesosstate.Status {
	return []mesosstate.Status{{State: "TASK_STAGING", Timestamp: ts - 1}, {State: "TASK_RUNNING", Timestamp: ts}}
}

// withNetinfo is a running status whose container has addr.
func withNetinfo(addr string) []mesosstate.Status {
	return []mesosstate.Status{{State: "TASK_RUNNING", Timestamp: 1700000000,
		ContainerStatus: &mesosstate.ContainerStatus{NetworkInfos: []mesosstate.NetworkInfo{{IPAddresses: []mesosstate.IPAddress{{IPAddress: addr}}}}}}}
}

func discovery(name string, ports ...mesosstate.DiscoveryPort) *mesosstate.DiscoveryInfo {
	return &mesosstate.DiscoveryInfo{Visibility: "FRAMEWORK", Name: name, Ports: mesosstate.DiscoveryPorts{Ports: ports}}
}

func specState() *mesosstate.State {
	return &mesosstate.State{
		Leader: "master@10.0.0.11:5050", PID: "master@10.0.0.11:5050",
		Slaves: []mesosstate.Slave{
			{ID: agent1, PID: "slave(1)@10.0.0.1:5051"},
			{ID: agent2, PID: "slave(1)@10.0.0.2:5051"},
			{ID: agent6, PID: "slave(1)@[fd00::6]:5051"},
		},
		Frameworks: []mesosstate.Framework{
			{Name: "marathon", PID: "scheduler-1@10.0.0.11:41000", Tasks: []mesosstate.Task{
				// No container IP, no DiscoveryInfo: the agent's address, host ports.
				{ID: "search.1", Name: "search", SlaveID: agent1, State: "TASK_RUNNING", Statuses: runningAt(1700000000),
					Resources: mesosstate.Resources{Ports: "[31302-31302]"}},
				// A second instance of the same name on another agent.
				{ID: "search.2", Name: "search", SlaveID: agent2, State: "TASK_RUNNING", Statuses: runningAt(1700000001),
					Resources: mesosstate.Resources{Ports: "[31303-31303]"}},
				// Container IP, no DiscoveryInfo.
				{ID: "ct.1", Name: "ct", SlaveID: agent1, State: "TASK_RUNNING", Statuses: withNetinfo("172.17.0.2"),
					Resources: mesosstate.Resources{Ports: "[31400-31400]"}},
				// DiscoveryInfo, no container IP.
				{ID: "di.1", Name: "di-task", SlaveID: agent2, State: "TASK_RUNNING", Statuses: runningAt(1700000002),
					Resources: mesosstate.Resources{Ports: "[31500-31500]"},
					Discovery: discovery("di", mesosstate.DiscoveryPort{Number: 31500, Name: "http", Protocol: "tcp"})},
				// DiscoveryInfo and a container IP: the container's port.
				{ID: "web.1", Name: "web", SlaveID: agent1, State: "TASK_RUNNING", Statuses: withNetinfo("172.17.0.3"),
					Resources: mesosstate.Resources{Ports: "[31600-31600]"},
					Discovery: discovery("web", mesosstate.DiscoveryPort{Number: 8080, Name: "http", Protocol: "tcp"},
						mesosstate.DiscoveryPort{Number: 9090, Name: "metrics"})},
				// Not running: no records.
				{ID: "staging.1", Name: "staging", SlaveID: agent1, State: "TASK_STAGING"},
				{ID: "killed.1", Name: "killed", SlaveID: agent1, State: "TASK_KILLED", Statuses: runningAt(1700000000)},
				// On an agent the state does not list: no records.
				{ID: "lost.1", Name: "lost", SlaveID: "unknown-S9", State: "TASK_RUNNING"},
				// On the IPv6 agent.
				{ID: "six.1", Name: "six", SlaveID: agent6, State: "TASK_RUNNING", Statuses: runningAt(1700000000)},
			}},
			// The spec's sanitizing example.
			{Name: "marathon.prod", Tasks: []mesosstate.Task{
				{ID: "api.1", Name: "apiserver.myservice", SlaveID: agent2, State: "TASK_RUNNING", Statuses: runningAt(1700000000),
					Resources: mesosstate.Resources{Ports: "[31700-31700]"}},
			}},
			// Spaces and capitals.
			{Name: "My Framework", Hostname: "10.0.0.12", Tasks: []mesosstate.Task{
				{ID: "big.1", Name: "Big Task", SlaveID: agent1, State: "TASK_RUNNING", Statuses: runningAt(1700000000)},
			}},
		},
	}
}

// instance is a task instance's name below the zone.
func instance(task, id, agent, fw string) string {
	return mesosstate.InstanceLabel(task, id, agent) + "." + fw
}

// testServer serves the records of st under mesos. (and in-addr.arpa. and
// ip6.arpa. for PTR) with masters listed in the configuration.
func testServer(t *testing.T, st *mesosstate.State, masters ...string) *Mesosschema {
	t.Helper()
	m := newMesosschema()
	m.Zones = []string{"mesos.", "in-addr.arpa.", "ip6.arpa."}
	m.master.Masters, m.gen.masters = masters, masters
	if len(masters) == 0 {
		m.master.Masters = []string{"10.0.0.11:5050"} // for the check: the records list none
	}
	m.NSAddrs = []netip.Addr{netip.MustParseAddr("10.0.0.53")}
	m.gen.nsAddrs = m.NSAddrs
	if err := m.complete(); err != nil {
		t.Fatal(err)
	}
	b := &builder{m: m}
	b.offer(generate(st, &m.gen, nil), testNow)
	b.Publish()
	return m
}

// ask sends one question to m and returns the reply.
func ask(t *testing.T, m *Mesosschema, name string, qtype uint16) *dns.Msg {
	t.Helper()
	r := new(dns.Msg)
	r.SetQuestion(dns.Fqdn(name), qtype)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := m.ServeDNS(context.Background(), w, r); err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return w.Msg
}

// rrLines are records as text, tabs made spaces, sorted.
func rrLines(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	slices.Sort(out)
	return out
}

// answerCase is one question and the reply a client must see.
type answerCase struct {
	name   string
	qtype  uint16
	rcode  int
	answer []string
	extra  []string
}

func checkAnswers(t *testing.T, m *Mesosschema, cases []answerCase) {
	t.Helper()
	for _, tc := range cases {
		r := ask(t, m, tc.name, tc.qtype)
		what := tc.name + " " + dns.TypeToString[tc.qtype]
		if r.Rcode != tc.rcode || !r.Authoritative {
			t.Errorf("%s: rcode %s aa %t, want %s", what, dns.RcodeToString[r.Rcode], r.Authoritative, dns.RcodeToString[tc.rcode])
		}
		if (len(r.Answer) == 0) != (len(r.Ns) == 1) {
			t.Errorf("%s: %d answers and %d authority records: want the SOA exactly when there is no answer", what, len(r.Answer), len(r.Ns))
		}
		for _, sec := range []struct {
			name      string
			got, want []string
		}{{"answer", rrLines(r.Answer), tc.answer}, {"additional", rrLines(r.Extra), tc.extra}} {
			want := slices.Clone(sec.want)
			slices.Sort(want)
			if !slices.Equal(sec.got, want) {
				t.Errorf("%s: %s\n  %s\nwant\n  %s", what, sec.name, strings.Join(sec.got, "\n  "), strings.Join(want, "\n  "))
			}
		}
	}
}

// TestSpecTasks checks the task names of the naming spec: A records of a
// task (every instance), of its agents (.slave), of each instance; the SRV
// table's four cases and the .slave SRV names, each target an instance
// that resolves to exactly that instance's address; DiscoveryInfo's
// named ports; sanitized names; IPv6 agents.
func TestSpecTasks(t *testing.T) {
	m := testServer(t, specState())
	search1, search2 := instance("search", "search.1", agent1, "marathon"), instance("search", "search.2", agent2, "marathon")
	ct, di, web := instance("ct", "ct.1", agent1, "marathon"), instance("di", "di.1", agent2, "marathon"), instance("web", "web.1", agent1, "marathon")
	a := func(name, addr string) string { return name + ". 60 IN A " + addr }
	srv := func(name string, port, target string) string {
		return name + ". 60 IN SRV 0 0 " + port + " " + target + ".mesos."
	}
	checkAnswers(t, m, []answerCase{
		// The spec's example: the agent's address when there is no container IP.
		{name: "search.marathon.mesos", qtype: dns.TypeA, answer: []string{
			a("search.marathon.mesos", "10.0.0.1"), a("search.marathon.mesos", "10.0.0.2")}},
		{name: "search.marathon.slave.mesos", qtype: dns.TypeA, answer: []string{
			a("search.marathon.slave.mesos", "10.0.0.1"), a("search.marathon.slave.mesos", "10.0.0.2")}},
		{name: search1 + ".mesos", qtype: dns.TypeA, answer: []string{a(search1+".mesos", "10.0.0.1")}},
		{name: search2 + ".slave.mesos", qtype: dns.TypeA, answer: []string{a(search2+".slave.mesos", "10.0.0.2")}},
		// CT-IP no, DI no: host port, to the instance on its agent.
		{name: "_search._tcp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_search._tcp.marathon.mesos", "31302", search1+".slave"), srv("_search._tcp.marathon.mesos", "31303", search2+".slave")},
			extra:  []string{a(search1+".slave.mesos", "10.0.0.1"), a(search2+".slave.mesos", "10.0.0.2")}},
		{name: "_search._udp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_search._udp.marathon.mesos", "31302", search1+".slave"), srv("_search._udp.marathon.mesos", "31303", search2+".slave")},
			extra:  []string{a(search1+".slave.mesos", "10.0.0.1"), a(search2+".slave.mesos", "10.0.0.2")}},
		// CT-IP yes, DI no: the container's address for the task name, the host port to the agent.
		{name: "ct.marathon.mesos", qtype: dns.TypeA, answer: []string{a("ct.marathon.mesos", "172.17.0.2")}},
		{name: "_ct._tcp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_ct._tcp.marathon.mesos", "31400", ct+".slave")}, extra: []string{a(ct+".slave.mesos", "10.0.0.1")}},
		// CT-IP no, DI yes: the DiscoveryInfo name and port, to the instance (the agent's address).
		{name: "_di._tcp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_di._tcp.marathon.mesos", "31500", di)}, extra: []string{a(di+".mesos", "10.0.0.2")}},
		{name: "_di._udp.marathon.mesos", qtype: dns.TypeSRV, rcode: dns.RcodeNameError}, // the port says tcp
		{name: "_http._di._tcp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_http._di._tcp.marathon.mesos", "31500", di)}, extra: []string{a(di+".mesos", "10.0.0.2")}},
		{name: "di-task.marathon.mesos", qtype: dns.TypeA, rcode: dns.RcodeNameError}, // named by DiscoveryInfo
		{name: "_di._tcp.marathon.slave.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_di._tcp.marathon.slave.mesos", "31500", di+".slave")}, extra: []string{a(di+".slave.mesos", "10.0.0.2")}},
		// CT-IP yes, DI yes: the container's port at the container's address.
		{name: "_web._tcp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_web._tcp.marathon.mesos", "8080", web), srv("_web._tcp.marathon.mesos", "9090", web)},
			extra:  []string{a(web+".mesos", "172.17.0.3")}},
		{name: "_web._udp.marathon.mesos", qtype: dns.TypeSRV, // the metrics port says no protocol: both
			answer: []string{srv("_web._udp.marathon.mesos", "9090", web)}, extra: []string{a(web+".mesos", "172.17.0.3")}},
		{name: "_metrics._web._udp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_metrics._web._udp.marathon.mesos", "9090", web)}, extra: []string{a(web+".mesos", "172.17.0.3")}},
		{name: "_web._tcp.marathon.slave.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_web._tcp.marathon.slave.mesos", "31600", web+".slave")}, extra: []string{a(web+".slave.mesos", "10.0.0.1")}},
		// The spec's sanitizing example, spaces and capitals.
		{name: "apiserver-myservice.marathon.prod.mesos", qtype: dns.TypeA, answer: []string{a("apiserver-myservice.marathon.prod.mesos", "10.0.0.2")}},
		{name: "_apiserver-myservice._tcp.marathon.prod.mesos", qtype: dns.TypeSRV,
			answer: []string{srv("_apiserver-myservice._tcp.marathon.prod.mesos", "31700", instance("apiserver-myservice", "api.1", agent2, "marathon.prod")+".slave")},
			extra:  []string{a(instance("apiserver-myservice", "api.1", agent2, "marathon.prod")+".slave.mesos", "10.0.0.2")}},
		{name: "BigTask.MyFramework.mesos", qtype: dns.TypeA, answer: []string{a("BigTask.MyFramework.mesos", "10.0.0.1")}},
		// The IPv6 agent.
		{name: "six.marathon.mesos", qtype: dns.TypeAAAA, answer: []string{"six.marathon.mesos. 60 IN AAAA fd00::6"}},
		{name: "six.marathon.mesos", qtype: dns.TypeA},
		// Tasks not running, or on an agent not listed.
		{name: "staging.marathon.mesos", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "killed.marathon.mesos", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "lost.marathon.mesos", qtype: dns.TypeA, rcode: dns.RcodeNameError},
	})
}

// TestSpecInfrastructure checks the spec's other records: the leader and
// every master (masterN in the configured order, the leader appended when
// it is not listed), the agents, the frameworks, the server's own name,
// the apex, and NXDOMAIN against NODATA.
func TestSpecInfrastructure(t *testing.T) {
	m := testServer(t, specState(), "10.0.0.10:5050", "10.0.0.11:5050")
	a := func(name, addr string) string { return name + ". 60 IN A " + addr }
	soa := "mesos. 60 IN SOA ns1.mesos. root.ns1.mesos. "
	checkAnswers(t, m, []answerCase{
		{name: "leader.mesos", qtype: dns.TypeA, answer: []string{a("leader.mesos", "10.0.0.11")}},
		{name: "_leader._tcp.mesos", qtype: dns.TypeSRV, answer: []string{"_leader._tcp.mesos. 60 IN SRV 0 0 5050 leader.mesos."},
			extra: []string{a("leader.mesos", "10.0.0.11")}},
		{name: "_leader._udp.mesos", qtype: dns.TypeSRV, answer: []string{"_leader._udp.mesos. 60 IN SRV 0 0 5050 leader.mesos."},
			extra: []string{a("leader.mesos", "10.0.0.11")}},
		{name: "master.mesos", qtype: dns.TypeA, answer: []string{a("master.mesos", "10.0.0.10"), a("master.mesos", "10.0.0.11")}},
		{name: "master0.mesos", qtype: dns.TypeA, answer: []string{a("master0.mesos", "10.0.0.10")}},
		{name: "master1.mesos", qtype: dns.TypeA, answer: []string{a("master1.mesos", "10.0.0.11")}},
		{name: "master2.mesos", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "_master._tcp.mesos", qtype: dns.TypeSRV,
			answer: []string{"_master._tcp.mesos. 60 IN SRV 0 0 5050 master0.mesos.", "_master._tcp.mesos. 60 IN SRV 0 0 5050 master1.mesos."},
			extra:  []string{a("master0.mesos", "10.0.0.10"), a("master1.mesos", "10.0.0.11")}},
		{name: "slave.mesos", qtype: dns.TypeA, answer: []string{a("slave.mesos", "10.0.0.1"), a("slave.mesos", "10.0.0.2")}},
		{name: "slave.mesos", qtype: dns.TypeAAAA, answer: []string{"slave.mesos. 60 IN AAAA fd00::6"}},
		{name: "_slave._tcp.mesos", qtype: dns.TypeSRV, answer: []string{"_slave._tcp.mesos. 60 IN SRV 0 0 5051 slave.mesos."},
			extra: []string{a("slave.mesos", "10.0.0.1"), a("slave.mesos", "10.0.0.2"), "slave.mesos. 60 IN AAAA fd00::6"}},
		{name: "marathon.mesos", qtype: dns.TypeA, answer: []string{a("marathon.mesos", "10.0.0.11")}},
		{name: "_framework._tcp.marathon.mesos", qtype: dns.TypeSRV,
			answer: []string{"_framework._tcp.marathon.mesos. 60 IN SRV 0 0 41000 marathon.mesos."}, extra: []string{a("marathon.mesos", "10.0.0.11")}},
		{name: "myframework.mesos", qtype: dns.TypeA, answer: []string{a("myframework.mesos", "10.0.0.12")}},
		{name: "ns1.mesos", qtype: dns.TypeA, answer: []string{a("ns1.mesos", "10.0.0.53")}},
		{name: "mesos", qtype: dns.TypeNS, answer: []string{"mesos. 60 IN NS ns1.mesos."}, extra: []string{a("ns1.mesos", "10.0.0.53")}},
		// Empty non-terminals are NODATA; names that do not exist NXDOMAIN.
		{name: "marathon.slave.mesos", qtype: dns.TypeA},
		{name: "_tcp.marathon.mesos", qtype: dns.TypeSRV},
		{name: "prod.mesos", qtype: dns.TypeA},
		{name: "nothing.marathon.mesos", qtype: dns.TypeA, rcode: dns.RcodeNameError},
		{name: "search.marathon.mesos", qtype: dns.TypeMX}, // a name without that type: NODATA
	})
	r := ask(t, m, "mesos", dns.TypeSOA)
	if len(r.Answer) != 1 || !strings.HasPrefix(rrLines(r.Answer)[0], soa) || !strings.HasSuffix(rrLines(r.Answer)[0], " 60 600 86400 60") {
		t.Errorf("SOA: %v, want Mesos-DNS's names and timers", r.Answer)
	}
}

// TestSpecPTR: reverse lookups of a container's address name its task
// instance, an agent's slave.<domain>, a master's masterN.
func TestSpecPTR(t *testing.T) {
	m := testServer(t, specState(), "10.0.0.10:5050", "10.0.0.11:5050")
	ptr := func(addr, target string) answerCase {
		rev, _ := dns.ReverseAddr(addr)
		return answerCase{name: rev, qtype: dns.TypePTR, answer: []string{rev + " 60 IN PTR " + target + "."}}
	}
	checkAnswers(t, m, []answerCase{
		ptr("172.17.0.2", instance("ct", "ct.1", agent1, "marathon")+".mesos"),
		ptr("172.17.0.3", instance("web", "web.1", agent1, "marathon")+".mesos"),
		ptr("10.0.0.1", "slave.mesos"),
		ptr("fd00::6", "slave.mesos"),
		ptr("10.0.0.10", "master0.mesos"),
		ptr("10.0.0.11", "master1.mesos"),
		{name: "9.9.0.10.in-addr.arpa", qtype: dns.TypePTR, rcode: dns.RcodeNameError},
	})
}

// TestLeaderNotListed: a leader missing from the masters list gets the
// next masterN, as Mesos-DNS gives it.
func TestLeaderNotListed(t *testing.T) {
	m := testServer(t, specState(), "10.0.0.10:5050")
	checkAnswers(t, m, []answerCase{
		{name: "master1.mesos", qtype: dns.TypeA, answer: []string{"master1.mesos. 60 IN A 10.0.0.11"}},
		{name: "master.mesos", qtype: dns.TypeA, answer: []string{"master.mesos. 60 IN A 10.0.0.10", "master.mesos. 60 IN A 10.0.0.11"}},
	})
}

// TestNoTaskIP: with only the netinfo source, a task without a container
// address has no address records of its own and no SRV record pointing
// to them; its agent's names and the host ports stay.
func TestNoTaskIP(t *testing.T) {
	st := specState()
	m := newMesosschema()
	m.gen.ipSources = []string{mesosstate.IPSourceNetInfo}
	m.Zones, m.master.Masters = []string{"mesos."}, []string{"10.0.0.11:5050"}
	if err := m.complete(); err != nil {
		t.Fatal(err)
	}
	g := generate(st, &m.gen, nil)
	di := instance("di", "di.1", agent2, "marathon")
	for _, name := range []string{"search.marathon", di, "_di._tcp.marathon", "_http._di._tcp.marathon"} {
		if g.sets[name] != nil {
			t.Errorf("%s has records: %v", name, g.sets[name])
		}
	}
	for _, name := range []string{"search.marathon.slave", "_search._tcp.marathon", di + ".slave", "ct.marathon"} {
		if g.sets[name] == nil {
			t.Errorf("%s has no records", name)
		}
	}
}

// TestRFC952: with enforce_rfc952, labels are at most 24 characters and
// start with a letter.
func TestRFC952(t *testing.T) {
	st := &mesosstate.State{Leader: "master@10.0.0.11:5050", Slaves: []mesosstate.Slave{{ID: agent1, PID: "slave(1)@10.0.0.1:5051"}},
		Frameworks: []mesosstate.Framework{{Name: "marathon", Tasks: []mesosstate.Task{
			{ID: "long", Name: "a-task-name-that-is-far-too-long-for-rfc-952", SlaveID: agent1, State: "TASK_RUNNING"},
			{ID: "digit", Name: "9lives", SlaveID: agent1, State: "TASK_RUNNING"},
		}}}}
	for _, rfc952 := range []bool{false, true} {
		o := &genOptions{ipSources: mesosstate.DefaultIPSources, rfc952: rfc952, maxName: 200}
		g := generate(st, o, nil)
		for name := range g.sets {
			for label := range strings.SplitSeq(name, ".") {
				if rfc952 && (len(label) > 24 || label[0] >= '0' && label[0] <= '9') {
					t.Errorf("rfc952: label %q of %s", label, name)
				}
			}
		}
		if _, ok := g.sets["a-task-name-that-is-far-too-long-for-rfc-952.marathon"]; ok == rfc952 {
			t.Errorf("rfc952 %t: the long name served: %t", rfc952, ok)
		}
	}
}

// testNow is the fetch time of the tests' states.
var testNow = time.Unix(1700000100, 0)
