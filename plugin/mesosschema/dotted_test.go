package mesosschema

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// mesosDNS is the record set Mesos-DNS makes of a state, written here from
// its naming rules (records/generator.go) to judge ours by: names below the
// zone, with their addresses and SRV records (target below the zone, and
// port), as Mesos-DNS stores them before a question looks one up.
type mesosDNS struct {
	addrs map[string][]netip.Addr
	srvs  map[string][]modelSRV
	// unreachable are the names Mesos-DNS makes but never answers: it looks
	// questions up in lower case, so a name with an upper-case letter (or
	// a character no question carries) is stored and never found.
	unreachable []string
}

type modelSRV struct {
	target string
	port   uint16
}

func (m *mesosDNS) addA(name string, addrs ...netip.Addr) {
	for _, a := range addrs {
		if !slices.Contains(m.addrs[name], a) {
			m.addrs[name] = append(m.addrs[name], a)
		}
	}
}

func (m *mesosDNS) addSRV(name, target string, port uint16) {
	if r := (modelSRV{target, port}); !slices.Contains(m.srvs[name], r) {
		m.srvs[name] = append(m.srvs[name], r)
	}
}

// names are the names Mesos-DNS answers, sorted.
func (m *mesosDNS) names() []string {
	var out []string
	for n := range m.addrs {
		out = append(out, n)
	}
	for n := range m.srvs {
		if m.addrs[n] == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// mesosDNSRecords makes the task, framework and agent records of st the
// way Mesos-DNS does: a task named by DiscoveryInfo gets its names twice,
// once with the DiscoveryInfo name as written (not sanitised, dots kept,
// EnforceRFC952 or not) and once with it made a label; each instance is
// <name>-<hash>-<agent>; SRV owners are _<name>._<proto>.<fw>[.slave],
// named ports _<port>._<name>._<proto>.<fw>. One change kept on purpose is
// modelled: with enforce_rfc952 the task part of a label's instance name
// is cut so that it fits in 24 characters (Mesos-DNS leaves it longer).
func mesosDNSRecords(st *mesosstate.State, rfc952 bool) *mesosDNS {
	m := &mesosDNS{addrs: map[string][]netip.Addr{}, srvs: map[string][]modelSRV{}}
	spec := func(s string) string { return mesosstate.TaskLabel(s, rfc952) }
	agents := map[string]netip.Addr{}
	for _, s := range st.Slaves {
		a, port := pidAddr(s.PID)
		agents[s.ID] = a
		m.addA("slave", a)
		m.addSRV("_slave._tcp", "slave", port)
	}
	for _, f := range st.Frameworks {
		fw := mesosstate.FrameworkName(f.Name, rfc952)
		if a, port := pidAddr(f.PID); a.IsValid() {
			m.addA(fw, a)
			m.addSRV("_framework._tcp."+fw, fw, port)
		} else if a, err := netip.ParseAddr(f.Hostname); err == nil {
			m.addA(fw, a)
		}
		for i := range f.Tasks {
			t := &f.Tasks[i]
			if agent, ok := agents[t.SlaveID]; ok && t.Running() {
				m.task(t, fw, agent, spec, rfc952)
			}
		}
	}
	for _, n := range m.names() {
		if strings.ToLower(n) != n || strings.ContainsAny(n, " ") {
			m.unreachable = append(m.unreachable, n)
			delete(m.addrs, n)
			delete(m.srvs, n)
		}
	}
	return m
}

func (m *mesosDNS) task(t *mesosstate.Task, fw string, agent netip.Addr, spec func(string) string, rfc952 bool) {
	ips := t.IPs(mesosstate.DefaultIPSources, agent)
	if t.Discovery == nil || t.Discovery.Name == "" {
		m.taskName(t, spec(t.Name), instanceLabel(spec(t.Name), t.ID, t.SlaveID, rfc952)+"."+fw, fw, agent, ips, spec)
		return
	}
	verbatim := t.Discovery.Name
	m.taskName(t, verbatim, verbatim+"-"+mesosstate.InstanceSuffix(t.ID, t.SlaveID)+"."+fw, fw, agent, ips, spec)
	label := spec(t.Discovery.Name)
	m.taskName(t, label, instanceLabel(label, t.ID, t.SlaveID, rfc952)+"."+fw, fw, agent, ips, spec)
}

func (m *mesosDNS) taskName(t *mesosstate.Task, name, instance, fw string, agent netip.Addr, ips []netip.Addr, spec func(string) string) {
	hasDI := t.Discovery != nil && t.Discovery.Name != ""
	m.addA(name+"."+fw, ips...)
	m.addA(instance, ips...)
	m.addA(name+"."+fw+".slave", agent)
	m.addA(instance+".slave", agent)
	ports, _ := mesosstate.ParsePorts(t.Resources.Ports)
	for _, p := range ports {
		for _, proto := range []string{"tcp", "udp"} {
			m.addSRV("_"+name+"._"+proto+"."+fw+".slave", instance+".slave", p)
			if !hasDI {
				m.addSRV("_"+name+"._"+proto+"."+fw, instance+".slave", p)
			}
		}
	}
	if !hasDI {
		return
	}
	for _, p := range t.Discovery.Ports.Ports {
		protos := []string{"tcp", "udp"}
		if proto := spec(p.Protocol); proto != "" {
			protos = []string{proto}
		}
		for _, proto := range protos {
			owner := "_" + name + "._" + proto + "." + fw
			m.addSRV(owner, instance, uint16(p.Number))
			if portName := spec(p.Name); portName != "" {
				m.addSRV("_"+portName+"."+owner, instance, uint16(p.Number))
			}
		}
	}
}

// nameView is what a name holds as a client sees it: its addresses, and
// its SRV records as "port → the addresses the target resolves to".
type nameView struct {
	addrs []string
	srvs  []string
}

func (v nameView) String() string {
	return fmt.Sprintf("addresses %v, SRV %v", v.addrs, v.srvs)
}

func sortedAddrs(addrs []netip.Addr) []string {
	out := []string{}
	for _, a := range addrs {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func srvView(port uint16, targetAddrs []string) string {
	return strconv.Itoa(int(port)) + " → " + strings.Join(targetAddrs, ",")
}

// view is the model's nameView of name.
func (m *mesosDNS) view(name string) nameView {
	v := nameView{addrs: sortedAddrs(m.addrs[name]), srvs: []string{}}
	for _, r := range m.srvs[name] {
		v.srvs = append(v.srvs, srvView(r.port, sortedAddrs(m.addrs[r.target])))
	}
	slices.Sort(v.srvs)
	return v
}

// askView asks srv for name's A, AAAA and SRV records, as a client does,
// and follows each SRV target; every answer must be NOERROR, and the
// additional section must hold exactly the targets' addresses.
func askView(t *testing.T, srv *Mesosschema, name string) nameView {
	t.Helper()
	v := nameView{addrs: []string{}, srvs: []string{}}
	fqdn := name + ".mesos."
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		r := ask(t, srv, fqdn, qtype)
		if r.Rcode != dns.RcodeSuccess {
			t.Errorf("%s %s: %s, want NOERROR", name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode])
		}
		v.addrs = append(v.addrs, answerAddrs(r.Answer)...)
	}
	slices.Sort(v.addrs)
	r := ask(t, srv, fqdn, dns.TypeSRV)
	if r.Rcode != dns.RcodeSuccess {
		t.Errorf("%s SRV: %s, want NOERROR", name, dns.RcodeToString[r.Rcode])
	}
	var wantExtra []string
	for _, rr := range r.Answer {
		s := rr.(*dns.SRV)
		target := strings.TrimSuffix(s.Target, ".mesos.")
		addrs := askAddrs(t, srv, s.Target)
		v.srvs = append(v.srvs, srvView(s.Port, addrs))
		for _, a := range addrs {
			wantExtra = append(wantExtra, target+" "+a)
		}
	}
	slices.Sort(v.srvs)
	slices.Sort(wantExtra)
	var extra []string
	for _, rr := range r.Extra {
		extra = append(extra, strings.TrimSuffix(rr.Header().Name, ".mesos.")+" "+answerAddrs([]dns.RR{rr})[0])
	}
	slices.Sort(extra)
	if wantExtra = slices.Compact(wantExtra); !slices.Equal(extra, wantExtra) {
		t.Errorf("%s SRV: additional %v, want each target's addresses once: %v", name, extra, wantExtra)
	}
	return v
}

// askAddrs are the addresses a name resolves to (A and AAAA), sorted.
func askAddrs(t *testing.T, srv *Mesosschema, fqdn string) []string {
	t.Helper()
	var out []string
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		out = append(out, answerAddrs(ask(t, srv, fqdn, qtype).Answer)...)
	}
	slices.Sort(out)
	return out
}

func answerAddrs(rrs []dns.RR) []string {
	out := []string{}
	for _, rr := range rrs {
		switch r := rr.(type) {
		case *dns.A:
			out = append(out, r.A.String())
		case *dns.AAAA:
			out = append(out, r.AAAA.String())
		}
	}
	return out
}

// transferViews reads an AXFR of srv's zone into a nameView by name, each
// SRV target resolved within the transfer.
func transferViews(t *testing.T, srv *Mesosschema) map[string]nameView {
	t.Helper()
	ch, err := srv.Transfer("mesos.", 0)
	if err != nil {
		t.Fatal(err)
	}
	addrs, srvs := map[string][]string{}, map[string][]*dns.SRV{}
	for rrs := range ch {
		for _, rr := range rrs {
			name := strings.TrimSuffix(rr.Header().Name, ".mesos.")
			switch r := rr.(type) {
			case *dns.A, *dns.AAAA:
				addrs[name] = append(addrs[name], answerAddrs([]dns.RR{r})...)
			case *dns.SRV:
				srvs[name] = append(srvs[name], r)
			}
		}
	}
	out := map[string]nameView{}
	for name, as := range addrs {
		slices.Sort(as)
		out[name] = nameView{addrs: as, srvs: []string{}}
	}
	for name, rs := range srvs {
		v := out[name]
		if v.addrs == nil {
			v.addrs = []string{}
		}
		for _, r := range rs {
			v.srvs = append(v.srvs, srvView(r.Port, addrs[strings.TrimSuffix(r.Target, ".mesos.")]))
		}
		slices.Sort(v.srvs)
		out[name] = v
	}
	return out
}

// serveState serves st under mesos. with PTR zones, rfc952 as asked.
func serveState(t *testing.T, st *mesosstate.State, rfc952 bool) *Mesosschema {
	t.Helper()
	m := newMesosschema()
	m.Zones = []string{"mesos.", "in-addr.arpa.", "ip6.arpa."}
	m.master.Masters = []string{"10.1.0.1:5050"}
	m.gen.rfc952 = rfc952
	if err := m.complete(); err != nil {
		t.Fatal(err)
	}
	b := &builder{m: m}
	b.offer(generate(st, &m.gen, nil), testNow)
	b.Publish()
	return m
}

func dottedState(t *testing.T) *mesosstate.State {
	t.Helper()
	body, err := os.ReadFile("testdata/dotted.json")
	if err != nil {
		t.Fatal(err)
	}
	st, err := mesosstate.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// infrastructure are the names of the masters and of this server, which
// the model leaves out (TestSpecInfrastructure checks them).
var infrastructure = []string{"leader", "master", "master0", "_leader._tcp", "_leader._udp", "_master._tcp", "_master._udp"}

// TestDottedNamesAsMesosDNS serves testdata/dotted.json (DiscoveryInfo
// names with dots and underscores, upper case, a space; dotted task names
// without DiscoveryInfo; dotted framework names; named, UDP and
// protocol-less ports; a task not running), with enforce_rfc952 off and
// on, and requires of every name Mesos-DNS answers (the dotted SRV owners
// and names as well as the labels) exactly its addresses and, for each SRV
// record, its port and what its target resolves to; no other name; NODATA
// at every empty non-terminal the names make; NXDOMAIN at the names
// Mesos-DNS makes but never answers; the same records in an AXFR.
func TestDottedNamesAsMesosDNS(t *testing.T) {
	for _, rfc952 := range []bool{false, true} {
		t.Run(fmt.Sprintf("rfc952=%t", rfc952), func(t *testing.T) {
			st := dottedState(t)
			model := mesosDNSRecords(st, rfc952)
			srv := serveState(t, st, rfc952)
			names := model.names()
			for _, name := range names {
				if got, want := askView(t, srv, name), model.view(name); !equalViews(got, want) {
					t.Errorf("%s:\n  got  %v\n  want %v", name, got, want)
				}
			}
			checkSameNames(t, srv, names)
			checkEmptyNonTerminals(t, srv, model, names)
			checkTransfer(t, srv, model, names)
			for _, n := range model.unreachable {
				if lower := strings.ToLower(n); !slices.Contains(names, lower) {
					if r := ask(t, srv, lower+".mesos.", dns.TypeSRV); r.Rcode != dns.RcodeNameError {
						t.Errorf("%s (Mesos-DNS never answers %s): %s, want NXDOMAIN", lower, n, dns.RcodeToString[r.Rcode])
					}
				}
			}
		})
	}
}

func equalViews(a, b nameView) bool {
	return slices.Equal(a.addrs, b.addrs) && slices.Equal(a.srvs, b.srvs)
}

// checkSameNames: the snapshot holds the model's names, and only those
// (besides the masters').
func checkSameNames(t *testing.T, srv *Mesosschema, names []string) {
	t.Helper()
	var got []string
	for _, set := range srv.Snapshot().Services() {
		if !slices.Contains(infrastructure, set.Key()) && set.Key() != "ns1" {
			got = append(got, set.Key())
		}
	}
	slices.Sort(got)
	for _, n := range got {
		if !slices.Contains(names, n) {
			t.Errorf("%s is served; Mesos-DNS has no such name", n)
		}
	}
	for _, n := range names {
		if !slices.Contains(got, n) {
			t.Errorf("%s is not served", n)
		}
	}
}

// checkEmptyNonTerminals: every name above a name that exists, and none
// itself, answers NOERROR without records and with the SOA.
func checkEmptyNonTerminals(t *testing.T, srv *Mesosschema, model *mesosDNS, names []string) {
	t.Helper()
	ents := map[string]bool{}
	for _, n := range names {
		for rest := n; strings.Contains(rest, "."); {
			_, rest, _ = strings.Cut(rest, ".")
			if !slices.Contains(names, rest) {
				ents[rest] = true
			}
		}
	}
	if !ents["dog._tcp.marathon"] || !ents["dog._udp.marathon.slave"] || !ents["v1._tcp.marathon.prod"] {
		t.Fatalf("the fixture lost its dotted SRV owners: empty non-terminals %v", ents)
	}
	for ent := range ents {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeSRV} {
			r := ask(t, srv, ent+".mesos.", qtype)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
				t.Errorf("%s %s (an empty non-terminal): %s, %d answers, authority %v; want NODATA with the SOA",
					ent, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode], len(r.Answer), r.Ns)
			}
		}
	}
}

// checkTransfer: an AXFR lists every name with the same records.
func checkTransfer(t *testing.T, srv *Mesosschema, model *mesosDNS, names []string) {
	t.Helper()
	views := transferViews(t, srv)
	for _, name := range names {
		if got, want := views[name], model.view(name); !equalViews(got, want) {
			t.Errorf("AXFR %s:\n  got  %v\n  want %v", name, got, want)
		}
	}
	for name := range views {
		if name != "mesos." && !slices.Contains(names, name) && !slices.Contains(infrastructure, name) && name != "ns1" {
			t.Errorf("AXFR lists %s; Mesos-DNS has no such name", name)
		}
	}
}

// TestDottedOwners: the names, answered as a Mesos-DNS client
// asks them, next to the documented dashed ones; the empty non-terminals
// between; names Mesos-DNS does not have; the PTR records unchanged.
func TestDottedOwners(t *testing.T) {
	m := serveState(t, dottedState(t), false)
	const s0, s1 = "7c1e0a52-5d3b-4a8e-9f21-0b6c3d4e5f60-S0", "7c1e0a52-5d3b-4a8e-9f21-0b6c3d4e5f60-S1"
	dog1 := mesosstate.InstanceLabel("big-dog", "dog_big.0b7d54c2-1111-11ef-9a01-0242ac110002", s0) + ".marathon"
	dog2 := mesosstate.InstanceLabel("big-dog", "dog_big.0b7d54c2-2222-11ef-9a01-0242ac110002", s1) + ".marathon"
	web := mesosstate.InstanceLabel("web-api", "api_web.5c2e77a0-3333-11ef-9a01-0242ac110002", s1) + ".marathon"
	api := mesosstate.InstanceLabel("api-v1", "v1_api.d4a6f008-bbbb-11ef-9a01-0242ac110002", s1) + ".marathon.prod"
	a := func(name, addr string) string { return name + ".mesos. 60 IN A " + addr }
	srvs := func(owner string, recs ...string) []string {
		var out []string
		for i := 0; i < len(recs); i += 2 {
			out = append(out, owner+".mesos. 60 IN SRV 0 0 "+recs[i]+" "+recs[i+1]+".mesos.")
		}
		return out
	}
	dogs := []string{a(dog1, "9.0.0.11"), a(dog2, "9.0.0.12")}
	dogsSlave := []string{a(dog1+".slave", "10.1.0.10"), a(dog2+".slave", "10.1.0.11")}
	ptr := func(addr, target string) answerCase {
		rev, _ := dns.ReverseAddr(addr)
		return answerCase{name: rev, qtype: dns.TypePTR, answer: []string{rev + " 60 IN PTR " + target + ".mesos."}}
	}
	checkAnswers(t, m, []answerCase{
		{name: "_big.dog._tcp.marathon.mesos", qtype: dns.TypeSRV, extra: dogs,
			answer: srvs("_big.dog._tcp.marathon", "80", dog1, "443", dog1, "80", dog2, "443", dog2)},
		{name: "_big-dog._tcp.marathon.mesos", qtype: dns.TypeSRV, extra: dogs,
			answer: srvs("_big-dog._tcp.marathon", "80", dog1, "443", dog1, "80", dog2, "443", dog2)},
		{name: "_http._big.dog._tcp.marathon.mesos", qtype: dns.TypeSRV, extra: dogs,
			answer: srvs("_http._big.dog._tcp.marathon", "80", dog1, "80", dog2)},
		{name: "_big.dog._tcp.marathon.slave.mesos", qtype: dns.TypeSRV, extra: dogsSlave,
			answer: srvs("_big.dog._tcp.marathon.slave", "31354", dog1+".slave", "31355", dog1+".slave", "31356", dog2+".slave", "31357", dog2+".slave")},
		{name: "_big.dog._udp.marathon.slave.mesos", qtype: dns.TypeSRV, extra: dogsSlave,
			answer: srvs("_big.dog._udp.marathon.slave", "31354", dog1+".slave", "31355", dog1+".slave", "31356", dog2+".slave", "31357", dog2+".slave")},
		// A protocol-less port in both protocols, a UDP one, a port name
		// and protocol made labels.
		{name: "_web.api._udp.marathon.mesos", qtype: dns.TypeSRV, extra: []string{a(web, "10.1.0.11")},
			answer: srvs("_web.api._udp.marathon", "31400", web, "53", web)},
		{name: "_http-alt._web.api._tcp.marathon.mesos", qtype: dns.TypeSRV, extra: []string{a(web, "10.1.0.11")},
			answer: srvs("_http-alt._web.api._tcp.marathon", "8053", web)},
		// A dotted framework.
		{name: "_api.v1._tcp.marathon.prod.mesos", qtype: dns.TypeSRV, extra: []string{a(api, "9.0.0.14")},
			answer: srvs("_api.v1._tcp.marathon.prod", "8443", api)},
		// The names as written: the task's (with the scheduler-less task big
		// of framework dog.marathon, whose name it is too, as in Mesos-DNS).
		{name: "big.dog.marathon.mesos", qtype: dns.TypeA,
			answer: []string{a("big.dog.marathon", "9.0.0.11"), a("big.dog.marathon", "9.0.0.12"), a("big.dog.marathon", "10.1.0.11")}},
		{name: "dog._tcp.marathon.mesos", qtype: dns.TypeSRV},
		{name: "dog._tcp.marathon.slave.mesos", qtype: dns.TypeSRV},
		{name: "api._tcp.marathon.mesos", qtype: dns.TypeSRV},
		{name: "_big.dog._udp.marathon.mesos", qtype: dns.TypeSRV, rcode: dns.RcodeNameError},   // its ports say tcp
		{name: "_car.store._tcp.marathon.mesos", qtype: dns.TypeSRV, rcode: dns.RcodeNameError}, // no DiscoveryInfo
		{name: "_big.cat._tcp.marathon.mesos", qtype: dns.TypeSRV, rcode: dns.RcodeNameError},   // Big.Cat: never found there
		{name: "_gone.dog._tcp.marathon.mesos", qtype: dns.TypeSRV, rcode: dns.RcodeNameError},  // killed
		// A container's address keeps its one PTR record, to the instance's
		// label name.
		ptr("9.0.0.11", dog1),
		ptr("9.0.0.13", mesosstate.InstanceLabel("db-main", "db-main.6d3f88b1-4444-11ef-9a01-0242ac110002", "7c1e0a52-5d3b-4a8e-9f21-0b6c3d4e5f60-S2")+".marathon"),
	})
}
