package test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// Whole-server tests of mesosschema: CoreDNS started in-process against
// the stand-in Mesos master (internal/mesosmaster) serving
// examples/mesos/state.json as its own state, so that the leader it names
// is the stand-in itself (127.0.0.1 on a free port); asked with miekg/dns
// over UDP and TCP, with dig, and over the plugin's HTTP interface.

const (
	mesosZone      = "mesos."
	mesosStateFile = "../examples/mesos/state.json"
	// mesosMasterIP is where the stand-in master listens: the leader.mesos
	// and master0.mesos address.
	mesosMasterIP = "127.0.0.1"
)

// mesosSOA is the SOA of zone with mesosschema's default names and timers,
// rrLine's TTL (mesosServer's ttl), and the serial zeroed.
func mesosSOA(zone string) string {
	return rrLine(zone, "SOA", "ns1.mesos. root.ns1.mesos. 0 60 600 86400 60")
}

// srvLine is an SRV record as mesosschema serves it: priority and weight 0.
func srvLine(owner string, port int, target string) string {
	return rrLine(owner, "SRV", fmt.Sprintf("0 0 %d %s", port, target))
}

// exampleMesosState is the recorded demo state, decoded.
func exampleMesosState(t testing.TB) *mesosstate.State {
	t.Helper()
	body, err := os.ReadFile(mesosStateFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := mesosstate.Decode(body)
	if err != nil {
		t.Fatalf("%s: %v", mesosStateFile, err)
	}
	return st
}

// startMesosMaster serves st as its own state (leader, pid and leader_info
// naming it, as the command's -own does) on a free loopback port until the
// test ends.
func startMesosMaster(t testing.TB, st *mesosstate.State) *mesosmaster.Master {
	t.Helper()
	m, err := mesosmaster.Start(mesosmaster.Options{State: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// masterPort is the port the stand-in master listens on.
func masterPort(t testing.TB, m *mesosmaster.Master) int {
	t.Helper()
	_, p, err := net.SplitHostPort(m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// mesosServer is a Corefile: a server on a free loopback port whose
// mesosschema serves zones with rrLine's TTL; options go into the stanza,
// and the lines of plugins after it into the server block.
type mesosServer struct {
	zones          string
	options, after []string
}

func (c mesosServer) corefile(master string) string {
	var b strings.Builder
	b.WriteString(".:0 {\n    bind 127.0.0.1\n")
	fmt.Fprintf(&b, "    mesosschema %s {\n        masters %s\n        ttl 5\n", c.zones, master)
	for _, o := range c.options {
		b.WriteString("        " + o + "\n")
	}
	b.WriteString("    }\n")
	for _, p := range c.after {
		b.WriteString("    " + p + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// start serves the recorded demo state from a stand-in master and starts
// the server against it.
func (c mesosServer) start(t *testing.T) (*server, *mesosmaster.Master) {
	t.Helper()
	master := startMesosMaster(t, exampleMesosState(t))
	return startServer(t, c.corefile(master.Addr())), master
}

// TestMesosRecords asks a sample of the names examples/mesos/README.md
// lists, over UDP and TCP, for exact replies: AA set, the Additional
// section of SRV answers holding each target's addresses once, NODATA
// with the SOA for a name without the type asked or with names only below
// it, NXDOMAIN with the SOA for names that do not exist (tasks not
// running), and names matched in any case.
func TestMesosRecords(t *testing.T) {
	s, master := mesosServer{zones: "mesos"}.start(t)
	port := masterPort(t, master)
	soa := mesosSOA(mesosZone)
	a := func(owner string, ips ...string) wantReply {
		var rrs []string
		for _, ip := range ips {
			rrs = append(rrs, addrLine(owner, ip))
		}
		return answer(rrs...)
	}
	cases := []dnsCase{
		// The leader and the masters: the stand-in, as it serves the
		// state as its own.
		{"leader.mesos.", dns.TypeA, a("leader.mesos.", mesosMasterIP)},
		{"_leader._tcp.mesos.", dns.TypeSRV, answer(srvLine("_leader._tcp.mesos.", port, "leader.mesos.")).
			withExtra(addrLine("leader.mesos.", mesosMasterIP))},
		{"master.mesos.", dns.TypeA, a("master.mesos.", mesosMasterIP)},
		{"_master._udp.mesos.", dns.TypeSRV, answer(srvLine("_master._udp.mesos.", port, "master0.mesos.")).
			withExtra(addrLine("master0.mesos.", mesosMasterIP))},
		{"slave.mesos.", dns.TypeA, a("slave.mesos.", "10.0.1.21", "10.0.1.22", "10.0.1.23")},
		{"_slave._tcp.mesos.", dns.TypeSRV, answer(srvLine("_slave._tcp.mesos.", 5051, "slave.mesos.")).
			withExtra(a("slave.mesos.", "10.0.1.21", "10.0.1.22", "10.0.1.23").answer...)},
		// A framework's scheduler.
		{"_framework._tcp.marathon.prod.mesos.", dns.TypeSRV, answer(srvLine("_framework._tcp.marathon.prod.mesos.", 15102, "marathon.prod.mesos.")).
			withExtra(addrLine("marathon.prod.mesos.", "10.0.0.12"))},
		// Tasks: every instance, one instance, the agents.
		{"search.marathon.mesos.", dns.TypeA, a("search.marathon.mesos.", "10.0.1.21", "10.0.1.22")},
		{"web-kbrou-s1.marathon.mesos.", dns.TypeA, a("web-kbrou-s1.marathon.mesos.", "172.17.0.2")},
		{"web.marathon.slave.mesos.", dns.TypeA, a("web.marathon.slave.mesos.", "10.0.1.22", "10.0.1.23")},
		{"apiserver-myservice.marathon.mesos.", dns.TypeAAAA, a("apiserver-myservice.marathon.mesos.", "2001:db8:1::23")},
		{"apiserver-myservice.marathon.prod.mesos.", dns.TypeA, a("apiserver-myservice.marathon.prod.mesos.", "10.0.1.22")},
		// SRV without DiscoveryInfo: host ports, targets on the agents;
		// two instances on one agent give two targets of one address.
		{"_search._tcp.marathon.mesos.", dns.TypeSRV, answer(
			srvLine("_search._tcp.marathon.mesos.", 31101, "search-fqfyn-s0.marathon.slave.mesos."),
			srvLine("_search._tcp.marathon.mesos.", 31102, "search-ia9ta-s0.marathon.slave.mesos."),
			srvLine("_search._tcp.marathon.mesos.", 31201, "search-eio6j-s1.marathon.slave.mesos.")).withExtra(
			addrLine("search-fqfyn-s0.marathon.slave.mesos.", "10.0.1.21"),
			addrLine("search-ia9ta-s0.marathon.slave.mesos.", "10.0.1.21"),
			addrLine("search-eio6j-s1.marathon.slave.mesos.", "10.0.1.22"))},
		// SRV with DiscoveryInfo: to the instances' own addresses, each
		// target once in the Additional section.
		{"_web._tcp.marathon.mesos.", dns.TypeSRV, answer(
			srvLine("_web._tcp.marathon.mesos.", 31301, "web-kbrou-s1.marathon.mesos."),
			srvLine("_web._tcp.marathon.mesos.", 31302, "web-kbrou-s1.marathon.mesos."),
			srvLine("_web._tcp.marathon.mesos.", 31401, "web-grm4c-s2.marathon.mesos."),
			srvLine("_web._tcp.marathon.mesos.", 31402, "web-grm4c-s2.marathon.mesos.")).withExtra(
			addrLine("web-kbrou-s1.marathon.mesos.", "172.17.0.2"),
			addrLine("web-grm4c-s2.marathon.mesos.", "172.17.0.3"))},
		{"_grpc._worker-1._tcp.myframework.mesos.", dns.TypeSRV, answer(
			srvLine("_grpc._worker-1._tcp.myframework.mesos.", 9090, "worker-1-jm7ty-s2.myframework.mesos.")).withExtra(
			addrLine("worker-1-jm7ty-s2.myframework.mesos.", "192.168.50.7"))},
		// A dual-stack SRV target on the agent: the agent's names are IPv4.
		{"_apiserver-myservice._udp.marathon.mesos.", dns.TypeSRV, answer(
			srvLine("_apiserver-myservice._udp.marathon.mesos.", 31501, "apiserver-myservice-r1q9r-s2.marathon.slave.mesos.")).withExtra(
			addrLine("apiserver-myservice-r1q9r-s2.marathon.slave.mesos.", "10.0.1.23"))},
		// The apex and the nameserver (where the server block binds).
		{mesosZone, dns.TypeSOA, answer(soa)},
		{mesosZone, dns.TypeNS, answer(rrLine(mesosZone, "NS", "ns1.mesos.")).withExtra(addrLine("ns1.mesos.", "127.0.0.1"))},
		{"ns1.mesos.", dns.TypeA, a("ns1.mesos.", "127.0.0.1")},
		// NODATA: empty non-terminals, a type the name does not have.
		{"marathon.slave.mesos.", dns.TypeA, nodata(soa)},
		{"_tcp.marathon.mesos.", dns.TypeSRV, nodata(soa)},
		{"backup.metronome.mesos.", dns.TypeAAAA, nodata(soa)},
		{"search.marathon.mesos.", dns.TypeTXT, nodata(soa)},
		{mesosZone, dns.TypeA, nodata(soa)},
		// NXDOMAIN: a staging task, a killed instance, a finished task,
		// a protocol DiscoveryInfo does not name.
		{"cache.marathon.mesos.", dns.TypeA, nxdomain(soa)},
		{"search-dzd9c-s2.marathon.mesos.", dns.TypeA, nxdomain(soa)},
		{"report.metronome.mesos.", dns.TypeA, nxdomain(soa)},
		{"_web._udp.marathon.mesos.", dns.TypeSRV, nxdomain(soa)},
		{"nothing.mesos.", dns.TypeAAAA, nxdomain(soa)},
	}
	// Any case: the owner as asked, the rest as served.
	mixedA, mixedSRV := mixedCase("worker-1.myframework.mesos."), mixedCase("_http._web._tcp.marathon.mesos.")
	cases = append(cases,
		dnsCase{mixedA, dns.TypeA, a(mixedA, "192.168.50.7")},
		dnsCase{mixedSRV, dns.TypeSRV, answer(
			srvLine(mixedSRV, 31301, "web-kbrou-s1.marathon.mesos."),
			srvLine(mixedSRV, 31401, "web-grm4c-s2.marathon.mesos.")).withExtra(
			addrLine("web-kbrou-s1.marathon.mesos.", "172.17.0.2"),
			addrLine("web-grm4c-s2.marathon.mesos.", "172.17.0.3"))})
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) { checkAll(t, s, network, cases) })
	}
}

// fleetInstances is the size of the task of TestMesosLargeAnswers: its 60
// A records take some 1,000 bytes, twice what UDP carries without EDNS0.
const fleetInstances = 60

// addFleet adds a task "fleet" of n running instances on the Docker bridge
// (192.168.60.1 up) to the first framework, spread over the agents, and
// returns its addresses.
func addFleet(st *mesosstate.State, n int) []string {
	fw := &st.Frameworks[0]
	var ips []string
	for i := range n {
		ip := fmt.Sprintf("192.168.60.%d", i+1)
		ips = append(ips, ip)
		fw.Tasks = append(fw.Tasks, mesosstate.Task{
			ID: fmt.Sprintf("fleet.%04d", i), Name: "fleet", FrameworkID: fw.ID,
			SlaveID: st.Slaves[i%len(st.Slaves)].ID, State: "TASK_RUNNING",
			Statuses: []mesosstate.Status{{State: "TASK_RUNNING", Timestamp: 1705305000,
				ContainerStatus: &mesosstate.ContainerStatus{NetworkInfos: []mesosstate.NetworkInfo{
					{IPAddresses: []mesosstate.IPAddress{{IPAddress: ip}}}}}}},
		})
	}
	return ips
}

// rawUDP sends m over UDP to addr and returns the reply as it came: its
// size on the wire, and the message.
func rawUDP(t *testing.T, addr string, m *dns.Msg) (int, *dns.Msg) {
	t.Helper()
	q, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write(q); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, dns.MaxMsgSize)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf[:n]); err != nil {
		t.Fatalf("reply of %d bytes: %v", n, err)
	}
	return n, r
}

// TestMesosLargeAnswers: a task of 60 instances answers all of them over
// TCP; over UDP without EDNS0 the reply is truncated (TC set) and fits in
// 512 bytes, over UDP with a 4096-byte EDNS0 buffer it is whole; and the
// records are rotated from one answer to the next.
func TestMesosLargeAnswers(t *testing.T) {
	st := exampleMesosState(t)
	ips := addFleet(st, fleetInstances)
	master := startMesosMaster(t, st)
	s := startServer(t, mesosServer{zones: "mesos"}.corefile(master.Addr()))
	name := "fleet.marathon.mesos."
	var all []string
	for _, ip := range ips {
		all = append(all, addrLine(name, ip))
	}
	expect(t, s, "tcp", name, dns.TypeA, answer(all...), settleTimeout)

	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	size, r := rawUDP(t, s.UDP, q)
	if size > dns.MinMsgSize || !r.Truncated || r.Rcode != dns.RcodeSuccess || len(r.Answer) >= fleetInstances {
		t.Errorf("over UDP without EDNS0: %d bytes, TC %v, %s, %d records; want at most %d bytes, TC set, NOERROR, fewer than %d records",
			size, r.Truncated, dns.RcodeToString[r.Rcode], len(r.Answer), dns.MinMsgSize, fleetInstances)
	}
	for _, rr := range renderRRs(r.Answer) {
		if !slices.Contains(parseRRs(all), rr) {
			t.Errorf("truncated answer holds %s, not one of the task's records", rr)
		}
	}
	if r, err := exchangeEDNS(s, name, dns.TypeA, 4096); err != nil || r.Truncated || len(r.Answer) != fleetInstances {
		t.Errorf("over UDP with a 4096-byte EDNS0 buffer: %s; want %d records, TC clear", replySummary(r, err), fleetInstances)
	}
	expectRotated(t, s, name, fleetInstances)
}

// TestMesosPTR: with reverse zones in the stanza, a container's address
// names its instance, an agent's (and a task's on the host network, which
// is the agent's) names slave.mesos, the master's names master0.mesos; an
// address of a zone without a record is NXDOMAIN with that zone's SOA, and
// one of a fallthrough zone is passed to the next plugin (forward, to a
// stub upstream).
func TestMesosPTR(t *testing.T) {
	upstream := startStubUpstream(t)
	s, _ := mesosServer{
		zones:   "mesos 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 127.0.0.0/8",
		options: []string{"fallthrough 127.0.0.0/8"},
		after:   []string{"forward . " + upstream.addr},
	}.start(t)
	ptr := func(ip, target string) dnsCase {
		name := ptrName(t, ip)
		return dnsCase{name, dns.TypePTR, answer(rrLine(name, "PTR", target))}
	}
	cases := []dnsCase{
		ptr("172.17.0.2", "web-kbrou-s1.marathon.mesos."),
		ptr("192.168.50.7", "worker-1-jm7ty-s2.myframework.mesos."),
		ptr("10.0.1.21", "slave.mesos."),
		ptr("10.0.1.23", "slave.mesos."),
		ptr(mesosMasterIP, "master0.mesos."),
		// The recorded leader's and the framework's address: no PTR.
		{ptrName(t, "10.0.0.11"), dns.TypePTR, nxdomain(mesosSOA("10.in-addr.arpa."))},
		{ptrName(t, "172.17.0.2"), dns.TypeA, nodata(mesosSOA("17.172.in-addr.arpa."))},
	}
	mixed := mixedCase(ptrName(t, "172.17.0.3"))
	cases = append(cases, dnsCase{mixed, dns.TypePTR, answer(rrLine(mixed, "PTR", "web-grm4c-s2.marathon.mesos."))})
	for _, network := range []string{"udp", "tcp"} {
		checkAll(t, s, network, cases)
	}

	if n := upstream.count(); n != 0 {
		t.Errorf("the upstream was asked %d times; no name of the zones goes there", n)
	}
	r := s.exchange(t, "udp", ptrName(t, "127.0.0.2"), dns.TypePTR)
	if r.Rcode != dns.RcodeNameError || r.Authoritative || upstream.count() != 1 {
		t.Errorf("127.0.0.2 PTR: %s, AA %v, upstream asked %d times; want the upstream's NXDOMAIN through fallthrough",
			dns.RcodeToString[r.Rcode], r.Authoritative, upstream.count())
	}
}

// exampleMesosRecords reads the records examples/mesos/README.md lists (the
// "name TYPE value" lines of its plain code blocks, an SRV value being
// "port target") as zone file lines with rrLine's TTL. The README's
// leader and masters are the recorded leader, 10.0.0.11:5050; here they
// are the stand-in serving the state as its own, on mesosMasterIP and
// masterPort.
func exampleMesosRecords(t *testing.T, masterPort int) []string {
	t.Helper()
	f, err := os.Open("../examples/mesos/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	open, plain := false, false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			open, plain = !open, !open && line == "```"
			continue
		}
		fields := strings.Fields(line)
		if !open || !plain || len(fields) < 3 || !slices.Contains([]string{"A", "AAAA", "SRV"}, fields[1]) {
			continue
		}
		owner, rtype, value := fields[0], fields[1], strings.Join(fields[2:], " ")
		switch owner {
		case "leader.mesos.", "master.mesos.", "master0.mesos.":
			value = strings.Replace(value, "10.0.0.11", mesosMasterIP, 1)
		case "_leader._tcp.mesos.", "_leader._udp.mesos.", "_master._tcp.mesos.", "_master._udp.mesos.":
			value = strings.Replace(value, "5050", strconv.Itoa(masterPort), 1)
		}
		if rtype == "SRV" {
			value = "0 0 " + value
		}
		out = append(out, rrLine(owner, rtype, value))
	}
	if len(out) < 50 {
		t.Fatalf("read %d records from the README: its code blocks changed form", len(out))
	}
	return out
}
