package mesosstatetest

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

var small = GenOptions{Seed: 7, Tasks: 400, Frameworks: 12, Agents: 30, NotRunning: 0.1, NetInfo: 0.3, DockerLabel: 0.2,
	Discovery: 0.4, IPv6Agents: 0.3, OddNames: 0.5}

func TestGenerateDeterministic(t *testing.T) {
	a, b := Marshal(Generate(small)), Marshal(Generate(small))
	if !bytes.Equal(a, b) {
		t.Fatal("the same options gave two states")
	}
	other := small
	other.Seed++
	if bytes.Equal(a, Marshal(Generate(other))) {
		t.Fatal("another seed gave the same state")
	}
}

// TestMarshalDecodes: what Marshal writes decodes to a state that writes
// the same bytes again, so the decoded state holds all the generated one
// does.
func TestMarshalDecodes(t *testing.T) {
	body := Marshal(Generate(small))
	s, err := mesosstate.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if again := Marshal(s); !bytes.Equal(again, body) {
		t.Fatalf("decode and marshal again: %d bytes, were %d", len(again), len(body))
	}
}

func TestGenerateShape(t *testing.T) {
	s := Generate(small)
	if len(s.Slaves) != 30 || len(s.Frameworks) != 12 {
		t.Fatalf("%d agents, %d frameworks", len(s.Slaves), len(s.Frameworks))
	}
	agentIP := map[string]netip.Addr{}
	v6 := 0
	for _, a := range s.Slaves {
		pid, err := mesosstate.ParsePID(a.PID)
		if err != nil {
			t.Fatalf("agent PID: %v", err)
		}
		ip, _ := pid.Addr()
		agentIP[a.ID] = ip
		if ip.Is6() {
			v6++
		}
	}
	var running, other, withDI, container, multi int
	names := map[string]int{}
	odd := 0
	for _, f := range s.Frameworks {
		if mesosstate.FrameworkName(f.Name, false) != f.Name {
			odd++
		}
		if _, err := mesosstate.ParsePID(f.PID); err != nil {
			t.Errorf("framework PID: %v", err)
		}
		for i := range f.Tasks {
			task := &f.Tasks[i]
			if _, ok := agentIP[task.SlaveID]; !ok || task.FrameworkID != f.ID {
				t.Fatalf("task %s: agent %q, framework %q", task.ID, task.SlaveID, task.FrameworkID)
			}
			if _, err := mesosstate.ParsePorts(task.Resources.Ports); err != nil {
				t.Fatal(err)
			}
			if !task.Running() {
				other++
				continue
			}
			running++
			names[f.ID+"/"+task.Name]++
			if task.Discovery != nil {
				withDI++
			}
			ips := task.IPs([]string{"netinfo", "docker"}, netip.Addr{})
			if len(ips) > 0 {
				container++
			}
		}
	}
	for _, n := range names {
		if n > 1 {
			multi++
		}
	}
	if running != 400 || other != 40 {
		t.Errorf("%d running and %d other tasks, want 400 and 40", running, other)
	}
	if v6 == 0 || v6 == 30 || odd == 0 || withDI == 0 || container == 0 || multi == 0 {
		t.Errorf("%d IPv6 agents, %d odd framework names, %d tasks with DiscoveryInfo, %d with container IPs, %d shared names",
			v6, odd, withDI, container, multi)
	}
}

// TestMarshalSize: the JSON is about as large per task as a real master's.
func TestMarshalSize(t *testing.T) {
	opts := small
	opts.Seed, opts.NotRunning = 3, 0
	perTask := len(Marshal(Generate(opts))) / opts.Tasks
	if perTask < 1500 || perTask > 2500 {
		t.Errorf("%d bytes a task, want 1500-2500", perTask)
	}
	t.Logf("%d bytes a task", perTask)
}

func TestBenchShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 tasks")
	}
	for name, opts := range map[string]GenOptions{"BenchShape": BenchShape, "BenchShapeWorst": BenchShapeWorst} {
		s := Generate(opts)
		running := 0
		for _, f := range s.Frameworks {
			for i := range f.Tasks {
				if f.Tasks[i].Running() {
					running++
				}
			}
		}
		body := Marshal(s)
		if running != 10000 || len(s.Frameworks) != 100 || len(s.Slaves) != 500 {
			t.Errorf("%s: %d running tasks, %d frameworks, %d agents", name, running, len(s.Frameworks), len(s.Slaves))
		}
		t.Logf("%s: %d bytes of JSON, %d a running task", name, len(body), len(body)/running)
	}
}

// BenchmarkDecode decodes the benchmark shapes' JSON, as a poll does.
func BenchmarkDecode(b *testing.B) {
	for _, shape := range []struct {
		name string
		opts GenOptions
	}{{"BenchShape", BenchShape}, {"BenchShapeWorst", BenchShapeWorst}} {
		body := Marshal(Generate(shape.opts))
		b.Run(shape.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mesosstate.Decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
