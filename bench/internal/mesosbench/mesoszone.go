package mesosbench

import (
	"bufio"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// mesosZone is the zone the Mesos shapes are served under.
const mesosZone = "mesos."

// zone is a zone's records as a server transferred them: what the file
// plugin serves, and the names the query mix is checked against.
type zone struct {
	rrs []dns.RR
	// types are the types of each owner name (lower case).
	types map[string]map[uint16]bool
}

// transferZone asks the server at addr for an AXFR of name.
func transferZone(addr, name string) (*zone, error) {
	m := new(dns.Msg)
	m.SetAxfr(name)
	envs, err := new(dns.Transfer).In(m, addr)
	if err != nil {
		return nil, fmt.Errorf("AXFR %s from %s: %w", name, addr, err)
	}
	var rrs []dns.RR
	for env := range envs {
		if env.Error != nil {
			return nil, fmt.Errorf("AXFR %s from %s: %w", name, addr, env.Error)
		}
		rrs = append(rrs, env.RR...)
	}
	return newZone(rrs)
}

// newZone is the zone of an AXFR's records: the SOA that opens it, the
// records, and the SOA that closes it (dropped).
func newZone(rrs []dns.RR) (*zone, error) {
	if len(rrs) < 2 || rrs[0].Header().Rrtype != dns.TypeSOA || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA {
		return nil, fmt.Errorf("AXFR of %d records, not opened and closed by the SOA", len(rrs))
	}
	z := &zone{rrs: rrs[:len(rrs)-1], types: map[string]map[uint16]bool{}}
	for _, rr := range z.rrs {
		owner := strings.ToLower(rr.Header().Name)
		if z.types[owner] == nil {
			z.types[owner] = map[uint16]bool{}
		}
		z.types[owner][rr.Header().Rrtype] = true
	}
	return z, nil
}

// has tells whether name owns records of type t.
func (z *zone) has(name string, t uint16) bool { return z.types[strings.ToLower(name)][t] }

// write writes the zone file the file plugin loads: a record a line.
func (z *zone) write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, rr := range z.rrs {
		fmt.Fprintln(w, rr.String())
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// mesosNames are the names of a state's running tasks that the zone has,
// by kind, and what the state made that the zone lacks.
type mesosNames struct {
	tasks, instances, srvs, slaves []string
	// expected and found count the names the state gives and those the
	// zone holds: the plugin names tasks as the mix expects.
	expected, found int
}

// namesOf lists the names of the running tasks of st, as Mesos-DNS makes
// them (mesosstate's label rules), keeping those a zone holds (has: a
// zone's has): the task name, the instance name, the task's SRV name over
// TCP and its .slave name.
func namesOf(st *mesosstate.State, has func(name string, t uint16) bool) mesosNames {
	var out mesosNames
	seen := map[string]bool{}
	keep := func(list *[]string, name string, types ...uint16) {
		if seen[name] {
			return
		}
		seen[name] = true
		out.expected++
		for _, t := range types {
			if has(name, t) {
				out.found++
				*list = append(*list, name)
				return
			}
		}
	}
	for _, ref := range namedRunning(st) {
		fw := &st.Frameworks[ref.fw]
		t := &fw.Tasks[ref.task]
		label, fwName := mesosstate.TaskLabel(taskName(t), false), mesosstate.FrameworkName(fw.Name, false)
		keep(&out.tasks, label+"."+fwName+"."+mesosZone, dns.TypeA, dns.TypeAAAA)
		keep(&out.instances, mesosstate.InstanceLabel(label, t.ID, t.SlaveID)+"."+fwName+"."+mesosZone, dns.TypeA, dns.TypeAAAA)
		keep(&out.slaves, label+"."+fwName+".slave."+mesosZone, dns.TypeA, dns.TypeAAAA)
		if t.Resources.Ports != "" || t.Discovery != nil {
			keep(&out.srvs, "_"+label+"._tcp."+fwName+"."+mesosZone, dns.TypeSRV)
		}
	}
	return out
}

// mesosMix is the query mix of a Mesos cluster's clients: task names (A,
// and AAAA as dual-stack resolvers ask), instance names, SRV names, the
// .slave names, and search-path misses. An address name is asked for A
// where it has one, else AAAA (an agent known by its IPv6 address).
func mesosMix(n mesosNames, z *zone) ([]querymix.Share, error) {
	if len(n.tasks) == 0 || len(n.instances) == 0 || len(n.srvs) == 0 || len(n.slaves) == 0 {
		return nil, fmt.Errorf("the zone lacks names of a kind: %d task, %d instance, %d SRV, %d .slave names",
			len(n.tasks), len(n.instances), len(n.srvs), len(n.slaves))
	}
	addr := func(name string) querymix.Query {
		if z.has(name, dns.TypeA) {
			return querymix.Query{Name: name, Qtype: dns.TypeA, Expect: "answer"}
		}
		return querymix.Query{Name: name, Qtype: dns.TypeAAAA, Expect: "answer"}
	}
	pick := func(r *rand.Rand, names []string) string { return names[r.IntN(len(names))] }
	frameworks := map[string]bool{}
	for _, name := range n.tasks {
		_, fw, _ := strings.Cut(strings.TrimSuffix(name, "."+mesosZone), ".")
		frameworks[fw] = true
	}
	fws := slices.Sorted(maps.Keys(frameworks))
	return []querymix.Share{
		{Kind: "task A", Weight: 30, Make: func(r *rand.Rand) querymix.Query { return addr(pick(r, n.tasks)) }},
		{Kind: "task AAAA (NODATA where IPv4 only)", Weight: 10, Make: func(r *rand.Rand) querymix.Query {
			name := pick(r, n.tasks)
			q := querymix.Query{Name: name, Qtype: dns.TypeAAAA, Expect: "nodata"}
			if z.has(name, dns.TypeAAAA) {
				q.Expect = "answer"
			}
			return q
		}},
		{Kind: "instance A", Weight: 15, Make: func(r *rand.Rand) querymix.Query { return addr(pick(r, n.instances)) }},
		{Kind: "SRV _task._tcp", Weight: 15, Make: func(r *rand.Rand) querymix.Query {
			return querymix.Query{Name: pick(r, n.srvs), Qtype: dns.TypeSRV, Expect: "answer"}
		}},
		{Kind: "task .slave A", Weight: 10, Make: func(r *rand.Rand) querymix.Query { return addr(pick(r, n.slaves)) }},
		{Kind: "search-path NXDOMAIN", Weight: 20, Make: func(r *rand.Rand) querymix.Query {
			// What a task whose search path is <framework>.mesos and mesos
			// sends first for an external name.
			ext := querymix.ExternalNames[r.IntN(len(querymix.ExternalNames))] + "."
			name := ext + mesosZone
			if r.IntN(2) == 0 {
				name = ext + fws[r.IntN(len(fws))] + "." + mesosZone
			}
			return querymix.Query{Name: name, Qtype: dns.TypeA, Expect: "nxdomain"}
		}},
	}, nil
}
