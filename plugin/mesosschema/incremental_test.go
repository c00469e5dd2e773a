package mesosschema

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/dnszone"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// modelShape is a small cluster with everything the naming rules treat
// apart: odd framework names, container and Docker label addresses, IPv6
// agents, DiscoveryInfo names and ports, tasks not running.
var modelShape = mesosstatetest.GenOptions{Seed: 3, Tasks: 150, Frameworks: 6, Agents: 12, NotRunning: 0.1, NetInfo: 0.3,
	DockerLabel: 0.2, Discovery: 0.4, IPv6Agents: 0.2, MaxInstances: 4, OddNames: 0.3}

// TestIncrementalMatchesFullBuild applies random change batches to a
// generated state, hands each state's records from the incremental
// generator to the builder, and requires after each that the published
// snapshot equals a full build's (every name, every record, the PTR
// index), that the snapshot published before is left as it was, and that
// the same state again publishes nothing.
//
// Some batches are offered two or three at a time before one Apply, as a
// slow build loop sees them: the builder folds them. Without the host IP
// source, tasks without a container address get no address at all, and
// their SRV targets and PTR claims are left out: the rules that read
// what came before.
func TestIncrementalMatchesFullBuild(t *testing.T) {
	noHost := []string{mesosstate.IPSourceNetInfo, mesosstate.IPSourceDocker}
	for _, c := range []struct {
		rfc952, decoded bool
		ips             []string
	}{{false, false, mesosstate.DefaultIPSources}, {true, false, mesosstate.DefaultIPSources}, {false, false, noHost},
		{false, true, mesosstate.DefaultIPSources}, {false, true, noHost}} {
		t.Run(fmt.Sprint("rfc952=", c.rfc952, ",decoded=", c.decoded, ",ips=", c.ips), func(t *testing.T) {
			checkIncremental(t, c.rfc952, c.ips, c.decoded)
		})
	}
}

// polled returns what the poller reads of each state: with decoded, the
// state written as a master writes it and read by one Decoder, which
// takes the tasks and agents of the same text from the state before;
// else the state itself.
func polled(t *testing.T, decoded bool) func(*mesosstate.State) *mesosstate.State {
	if !decoded {
		return func(st *mesosstate.State) *mesosstate.State { return st }
	}
	dec := mesosstate.NewDecoder()
	return func(st *mesosstate.State) *mesosstate.State {
		got, err := dec.Decode(bytes.NewReader(mesosstatetest.Marshal(st)))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
}

func checkIncremental(t *testing.T, rfc952 bool, ips []string, decoded bool) {
	read := polled(t, decoded)
	rnd := rand.New(rand.NewPCG(5, 8))
	st := mesosstatetest.Generate(modelShape)
	// An agent known by host name only: its tasks have no address of
	// their own unless their container has one.
	st.Slaves = append(st.Slaves, mesosstate.Slave{ID: "named-S", PID: "slave(1)@agent.example:5051"})
	m := testServer(t, &mesosstate.State{Leader: st.Leader}, "10.0.0.10:5050")
	m.gen.rfc952, m.gen.ipSources = rfc952, ips
	in, b := newIncremental(&m.gen), &builder{m: m}
	b.offer(in.next(read(st)), testNow)
	b.Apply()
	partial := 0
	for round := range 200 {
		cur := m.Snapshot()
		frozen := dump(m, cur)
		for range rnd.IntN(3) { // offered, not applied: folded into the next
			mutate(rnd, st)
			b.offer(in.next(read(st)), testNow)
		}
		for range 1 + rnd.IntN(4) {
			mutate(rnd, st)
		}
		g := in.next(read(st))
		if g.partial {
			partial++
		}
		b.offer(g, testNow)
		b.Apply()
		if dump(m, cur) != frozen {
			t.Fatalf("round %d changed the snapshot published before it", round)
		}
		full := testServer(t, &mesosstate.State{Leader: st.Leader}, "10.0.0.10:5050")
		full.gen.rfc952, full.gen.ipSources = rfc952, ips
		fb := &builder{m: full}
		fb.offer(generate(st, &full.gen, nil), testNow)
		fb.Apply()
		if got, want := dump(m, m.Snapshot()), dump(full, full.Snapshot()); got != want {
			t.Fatalf("round %d (partial %v): the incremental snapshot differs from a full build:\ngot\n%s\nwant\n%s", round, g.partial, got, want)
		}
		if g.tasks != in.tasks || in.tasks != generate(st, &full.gen, nil).tasks {
			t.Fatalf("round %d: %d tasks counted, a full build counts %d", round, in.tasks, generate(st, &full.gen, nil).tasks)
		}
		next := m.Snapshot()
		b.offer(in.next(read(st)), testNow)
		b.Apply()
		if m.Snapshot() != next {
			t.Fatalf("round %d: the same state again published a snapshot", round)
		}
	}
	// Most batches must take the incremental path, or this tests generate.
	if partial < 100 {
		t.Fatalf("only %d of 200 rounds were incremental", partial)
	}
}

// mutate makes one random change to st, of the kinds a cluster makes.
func mutate(rnd *rand.Rand, st *mesosstate.State) {
	f := &st.Frameworks[rnd.IntN(len(st.Frameworks))]
	var t *mesosstate.Task
	if len(f.Tasks) > 0 {
		t = &f.Tasks[rnd.IntN(len(f.Tasks))]
	}
	agent := st.Slaves[rnd.IntN(len(st.Slaves))]
	switch k := rnd.IntN(15); {
	case t == nil || k == 0: // a task starts, often another instance of an app
		nt := mesosstate.Task{ID: fmt.Sprintf("new-%d", rnd.Uint32()), Name: fmt.Sprintf("app%d", rnd.IntN(5)), SlaveID: agent.ID,
			State: "TASK_RUNNING", Resources: mesosstate.Resources{Ports: fmt.Sprintf("[%d-%d]", 31000+rnd.IntN(9), 31010)}}
		if t != nil && rnd.IntN(2) == 0 {
			nt = *t
			nt.ID += fmt.Sprintf(".%d", rnd.Uint32())
		}
		f.Tasks = append(f.Tasks, nt)
	case k == 1: // killed
		i := rnd.IntN(len(f.Tasks))
		f.Tasks = slices.Delete(f.Tasks, i, i+1)
	case k == 2: // moved to another agent
		t.SlaveID = agent.ID
	case k == 3:
		t.Resources.Ports = fmt.Sprintf("[%d-%d]", 31000+rnd.IntN(5), 31005+rnd.IntN(3))
	case k == 4: // renamed, maybe to another framework's name
		f.Name = []string{"marathon", "Spark.Prod", "fw" + fmt.Sprint(rnd.IntN(3)), st.Frameworks[rnd.IntN(len(st.Frameworks))].Name}[rnd.IntN(4)]
	case k == 5 && len(st.Slaves) > 2: // an agent gone
		i := rnd.IntN(len(st.Slaves))
		st.Slaves = slices.Delete(st.Slaves, i, i+1)
	case k == 6:
		st.Leader = fmt.Sprintf("master@10.0.0.%d:5050", 10+rnd.IntN(3))
	case k == 7: // a dotted DiscoveryInfo name
		t.Discovery = discovery([]string{"big.dog", "db_main", "web", "a.b.c"}[rnd.IntN(4)],
			mesosstate.DiscoveryPort{Number: 8080 + rnd.IntN(2), Name: "http"})
	case k == 8: // a new container address, or none
		t.Statuses = withNetinfo(fmt.Sprintf("172.17.0.%d", rnd.IntN(20)))
		if rnd.IntN(3) == 0 {
			t.Statuses = nil
		}
	case k == 9: // killing: no longer running
		t.State = "TASK_KILLING"
	case k == 10: // the same task listed twice
		f.Tasks = append(f.Tasks, *t)
	case k == 11: // an agent comes back, or moves
		st.Slaves = append(st.Slaves, mesosstate.Slave{ID: fmt.Sprintf("new-S%d", rnd.IntN(4)), PID: fmt.Sprintf("slave(1)@10.0.2.%d:5051", rnd.IntN(4))})
	case k == 13: // a task named as another's instance, which has no address
		t.Statuses, t.SlaveID = nil, "named-S"
		nt := *t
		nt.ID, nt.Discovery, nt.SlaveID = nt.ID+".twin", nil, agent.ID
		nt.Name = mesosstate.InstanceLabel(taskName(t, false), t.ID, t.SlaveID)
		f.Tasks = slices.Insert(f.Tasks, 0, nt) // before it: a full build sees its names first
	case k == 12:
		f.PID = fmt.Sprintf("scheduler@10.0.3.%d:%d", rnd.IntN(3), 8080+rnd.IntN(2))
	default: // a status update DNS does not read
		t.Statuses = append(slices.Clone(t.Statuses), mesosstate.Status{State: "TASK_RUNNING", Timestamp: float64(1700000000 + rnd.IntN(1000))})
	}
}

// A partial state offered over a whole one not yet applied is laid over
// it: a name it drops is gone from the whole state, not kept as nil, and
// the whole state's other names stay; over a partial one, both changes
// are kept, the newer winning.
func TestOfferFoldsPartials(t *testing.T) {
	set := func(name, addr string) *dnszone.Facts {
		return dnszone.NewRecords(name, []netip.Addr{netip.MustParseAddr(addr)}, nil, nil)
	}
	b := &builder{}
	b.offer(&generated{sets: map[string]*dnszone.Facts{"a": set("a", "10.0.0.1"), "b": set("b", "10.0.0.2")}, running: map[string]time.Time{}}, testNow)
	b.offer(&generated{sets: map[string]*dnszone.Facts{"b": nil, "c": set("c", "10.0.0.3")}, running: map[string]time.Time{}, partial: true, names: 2, tasks: 4}, testNow)
	g, _ := b.take()
	if g.partial || len(g.sets) != 2 || g.sets["a"] == nil || g.sets["c"] == nil || g.tasks != 4 {
		t.Fatalf("folded over a whole state: partial %v, sets %v, tasks %d; want a and c, whole, 4 tasks", g.partial, slices.Sorted(maps.Keys(g.sets)), g.tasks)
	}
	b.offer(&generated{sets: map[string]*dnszone.Facts{"a": nil, "b": set("b", "10.0.0.2")}, running: map[string]time.Time{}, partial: true}, testNow)
	b.offer(&generated{sets: map[string]*dnszone.Facts{"b": set("b", "10.0.0.9"), "c": nil}, running: map[string]time.Time{}, partial: true}, testNow)
	g, _ = b.take()
	if !g.partial || len(g.sets) != 3 || g.sets["a"] != nil || g.sets["c"] != nil || !g.sets["b"].Equal(set("b", "10.0.0.9")) {
		t.Fatalf("folded partial states: partial %v, sets %v", g.partial, g.sets)
	}
}

// A task's fingerprint writes every field of the types it is made from: a
// field added to them (one generate may read) must be added to taskPrint,
// or a change of it alone would leave the task's records as they were.
func TestFingerprintCoversTask(t *testing.T) {
	printed := map[reflect.Type][]string{
		reflect.TypeFor[mesosstate.Task]():            {"ID", "Name", "FrameworkID", "SlaveID", "State", "Statuses", "Resources", "Discovery"},
		reflect.TypeFor[mesosstate.Resources]():       {"Ports"},
		reflect.TypeFor[mesosstate.Status]():          {"State", "Timestamp", "Labels", "ContainerStatus"},
		reflect.TypeFor[mesosstate.Label]():           {"Key", "Value"},
		reflect.TypeFor[mesosstate.ContainerStatus](): {"NetworkInfos"},
		reflect.TypeFor[mesosstate.NetworkInfo]():     {"Name", "IPAddresses", "IPAddress"},
		reflect.TypeFor[mesosstate.IPAddress]():       {"IPAddress", "Protocol"},
		reflect.TypeFor[mesosstate.DiscoveryInfo]():   {"Visibility", "Name", "Ports"},
		reflect.TypeFor[mesosstate.DiscoveryPorts]():  {"Ports"},
		reflect.TypeFor[mesosstate.DiscoveryPort]():   {"Number", "Name", "Protocol", "Labels"},
		reflect.TypeFor[mesosstate.Labels]():          {"Labels"},
	}
	for typ, fields := range printed {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, fields) {
			t.Errorf("%s has fields %v; taskPrint writes %v", typ, got, fields)
		}
	}
}
