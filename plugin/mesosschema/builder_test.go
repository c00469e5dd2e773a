package mesosschema

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// dump is everything a snapshot answers with: every record of every name
// under mesos., and the PTR index.
func dump(m *Mesosschema, s *dnszone.Snapshot) string {
	var lines []string
	for _, set := range s.Services() {
		for _, rr := range m.Records(set, "mesos.") {
			lines = append(lines, rr.String())
		}
	}
	s.PTRs("mesos.", func(a netip.Addr, target string) { lines = append(lines, "PTR "+a.String()+" "+target) })
	lines = append(lines, fmt.Sprint(s.PTREntries(), " PTR entries"))
	return strings.Join(lines, "\n")
}

// randomState is a small cluster whose tasks come and go, move agents,
// change addresses and ports, between calls.
func randomState(rnd *rand.Rand) *mesosstate.State {
	st := &mesosstate.State{Leader: fmt.Sprintf("master@10.0.0.%d:5050", 10+rnd.IntN(2))}
	for i := range 3 {
		st.Slaves = append(st.Slaves, mesosstate.Slave{ID: fmt.Sprintf("A-S%d", i), PID: fmt.Sprintf("slave(1)@10.0.1.%d:5051", i)})
	}
	for f := range 2 {
		fw := mesosstate.Framework{Name: fmt.Sprintf("fw%d", f)}
		for i := range rnd.IntN(8) {
			t := mesosstate.Task{ID: fmt.Sprintf("t%d-%d", f, i), Name: fmt.Sprintf("app%d", rnd.IntN(3)), SlaveID: fmt.Sprintf("A-S%d", rnd.IntN(3)),
				State: "TASK_RUNNING", Resources: mesosstate.Resources{Ports: fmt.Sprintf("[%d-%d]", 31000+i, 31000+i+rnd.IntN(2))}}
			if rnd.IntN(2) == 0 {
				t.Statuses = withNetinfo(fmt.Sprintf("172.17.0.%d", rnd.IntN(6)))
			}
			if rnd.IntN(3) == 0 {
				t.Discovery = discovery(t.Name, mesosstate.DiscoveryPort{Number: 8080 + rnd.IntN(2), Name: "http"})
			}
			fw.Tasks = append(fw.Tasks, t)
		}
		st.Frameworks = append(st.Frameworks, fw)
	}
	return st
}

// TestApplyMatchesFullBuild applies a sequence of random states through
// the builder and checks after each that the published snapshot equals a
// full build of that state, that the snapshot published before it did not
// change, and that a state whose records are unchanged publishes nothing:
// the same snapshot, the same serial.
func TestApplyMatchesFullBuild(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	m := testServer(t, randomState(rnd), "10.0.0.10:5050")
	b := &builder{m: m}
	for round := range 300 {
		cur := m.Snapshot()
		frozen := dump(m, cur)
		st := randomState(rnd)
		b.offer(generate(st, &m.gen, nil), testNow)
		b.Apply()
		if dump(m, cur) != frozen {
			t.Fatalf("round %d changed the snapshot published before it", round)
		}
		full := testServer(t, st, "10.0.0.10:5050")
		if got, want := dump(m, m.Snapshot()), dump(full, full.Snapshot()); got != want {
			t.Fatalf("round %d: applied snapshot differs from a full build:\ngot\n%s\nwant\n%s", round, got, want)
		}
		// The same state again: nothing to publish.
		b.offer(generate(st, &m.gen, nil), testNow)
		next := m.Snapshot()
		b.Apply()
		if m.Snapshot() != next || m.Snapshot().Serial() != next.Serial() {
			t.Fatalf("round %d: an unchanged state published a snapshot", round)
		}
	}
}

// TestSerialMovesOnlyWithRecords: the SOA serial changes when a record
// does, not when the state changes in what DNS does not read.
func TestSerialMovesOnlyWithRecords(t *testing.T) {
	st := specState()
	m := testServer(t, st)
	b := &builder{m: m}
	serial := m.Snapshot().Serial()
	// A status update that changes no address: no new serial.
	st.Frameworks[0].Tasks[0].Statuses = append(st.Frameworks[0].Tasks[0].Statuses, mesosstate.Status{State: "TASK_RUNNING", Timestamp: 1700000500})
	b.offer(generate(st, &m.gen, nil), testNow)
	b.Apply()
	if got := m.Snapshot().Serial(); got != serial {
		t.Errorf("serial %d after a change DNS does not read, want %d", got, serial)
	}
	// A task gone: a new serial, and its names gone.
	st.Frameworks[0].Tasks = slices.Delete(st.Frameworks[0].Tasks, 2, 3) // ct
	b.offer(generate(st, &m.gen, nil), testNow)
	b.Apply()
	if m.Snapshot().Serial() == serial {
		t.Error("the serial did not move when a task went")
	}
	if r := ask(t, m, "ct.marathon.mesos", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("ct.marathon.mesos after the task went: %s", dns.RcodeToString[r.Rcode])
	}
	rev, _ := dns.ReverseAddr("172.17.0.2")
	if r := ask(t, m, rev, dns.TypePTR); r.Rcode != dns.RcodeNameError {
		t.Errorf("the PTR of the task's address outlived it: %v", r.Answer)
	}
}
