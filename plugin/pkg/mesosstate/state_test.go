package mesosstate

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"testing"
)

func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestDecodeSmall(t *testing.T) {
	s, err := Decode(readFixture(t, "testdata/small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Leader != "master@192.0.2.10:5050" || s.PID != s.Leader || s.Hostname != "m1.test" {
		t.Errorf("master fields: %q %q %q", s.Leader, s.PID, s.Hostname)
	}
	wantInfo := &MasterInfo{ID: "0f9b2c4e-8a13-4d2f-b6e1-3c5a7d9e1f20", PID: "master@192.0.2.10:5050", Hostname: "m1.test",
		Port: 5050, Address: &Address{Hostname: "m1.test", IP: "192.0.2.10", Port: 5050}}
	if !reflect.DeepEqual(s.LeaderInfo, wantInfo) {
		t.Errorf("leader_info = %+v", s.LeaderInfo)
	}
	if len(s.Slaves) != 2 || s.Slaves[1].PID != "slave(1)@[2001:db8::21]:5051" {
		t.Fatalf("slaves = %+v", s.Slaves)
	}
	if len(s.Frameworks) != 1 || len(s.Frameworks[0].Tasks) != 2 {
		t.Fatalf("frameworks = %+v", s.Frameworks)
	}
	f := s.Frameworks[0]
	if f.Name != "marathon" || !f.Active || f.PID != "scheduler-6d1c0f3a@192.0.2.10:41000" {
		t.Errorf("framework = %+v", f)
	}
	db := f.Tasks[0]
	if db.Name != "db" || !db.Running() || db.Resources.Ports != "[31000-31001]" || len(db.Statuses) != 2 {
		t.Errorf("task db = %+v", db)
	}
	wantDI := &DiscoveryInfo{Visibility: "FRAMEWORK", Name: "db", Ports: DiscoveryPorts{Ports: []DiscoveryPort{{
		Number: 5432, Name: "pg", Protocol: "tcp",
		Labels: &Labels{Labels: []Label{{Key: "network-scope", Value: "container"}, {Key: "network-name", Value: "dcos"}}},
	}}}}
	if !reflect.DeepEqual(db.Discovery, wantDI) {
		t.Errorf("discovery = %+v", db.Discovery)
	}
	if cache := f.Tasks[1]; cache.Running() || cache.State != "TASK_STAGING" || cache.Discovery != nil {
		t.Errorf("task cache = %+v", cache)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := readFixture(t, "testdata/small.json")
	for _, tc := range []struct {
		name string
		body string
		want error
	}{
		{"nil", "", ErrEmpty},
		{"blank", " \n\t", ErrEmpty},
		{"null", "null", ErrNotObject},
		{"array", `[{"leader": "master@1.2.3.4:5050"}]`, ErrNotObject},
		{"string", `"master@1.2.3.4:5050"`, ErrNotObject},
		{"not JSON", "<html>502 Bad Gateway</html>", ErrMalformed},
		{"bad syntax inside", `{"leader": "master@1.2.3.4:5050", "frameworks": [}`, ErrMalformed},
		{"truncated", `{"leader": "master@1.2.3.4:5050", "frameworks": [`, ErrTruncated},
		{"truncated in a string", `{"leader": "master@1.2.3.4:50`, ErrTruncated},
		{"trailing garbage", `{"leader": "master@1.2.3.4:5050"} x`, ErrTrailingData},
		{"two objects", `{"leader": "master@1.2.3.4:5050"}{"leader": "master@1.2.3.4:5050"}`, ErrTrailingData},
		{"frameworks a string", `{"leader": "master@1.2.3.4:5050", "frameworks": "none"}`, ErrMalformed},
		{"tasks an object", `{"leader": "master@1.2.3.4:5050", "frameworks": [{"tasks": {}}]}`, ErrMalformed},
		{"port a string", `{"leader": "master@1.2.3.4:5050", "leader_info": {"port": "5050"}}`, ErrMalformed},
		{"no leader", `{"pid": "master@1.2.3.4:5050", "frameworks": []}`, ErrNoLeader},
		{"empty leader", `{"leader": ""}`, ErrNoLeader},
		{"null leader", `{"leader": null}`, ErrNoLeader},
		{"leader not a PID", `{"leader": "1.2.3.4:5050"}`, ErrBadLeader},
		{"leader a number", `{"leader": 5050}`, ErrMalformed},
		{"good then garbage", string(good) + "}", ErrTrailingData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Decode([]byte(tc.body))
			if !errors.Is(err, tc.want) || s != nil {
				t.Fatalf("Decode(%.60q) = %v, %v; want %v", tc.body, s, err, tc.want)
			}
		})
	}
}

// TestDecodeEveryPrefix: no cut of a good state is taken for a state.
func TestDecodeEveryPrefix(t *testing.T) {
	good := bytes.TrimSpace(readFixture(t, "testdata/small.json"))
	for i := range len(good) {
		if s, err := Decode(good[:i]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes = %+v, want an error", i, len(good), s)
		}
	}
	if _, err := Decode(append(good, " \n"...)); err != nil {
		t.Fatalf("trailing white space: %v", err)
	}
}

// TestDecodeSkippable: items DNS cannot use are the caller's to skip, not
// errors that would throw the whole state away.
func TestDecodeSkippable(t *testing.T) {
	body := `{"leader": "master@1.2.3.4:5050", "slaves": [{"id": "", "pid": "nonsense"}],
		"frameworks": [{"id": "", "name": "", "tasks": [{"id": "", "name": "", "state": "TASK_RUNNING",
		"resources": {"ports": "[9-1]"}, "statuses": null, "discovery": null}]}, {}], "agents": 7}`
	s, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Slaves) != 1 || len(s.Frameworks) != 2 || len(s.Frameworks[0].Tasks) != 1 {
		t.Fatalf("state = %+v", s)
	}
}

// TestDecodeExample pins what examples/mesos/README.md lists for the demo
// state: each task's labels and addresses, by the default IP sources and
// by autoip.
func TestDecodeExample(t *testing.T) {
	s, err := Decode(readFixture(t, "../../../examples/mesos/state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Leader != s.PID || s.Leader != "master@10.0.0.11:5050" || len(s.Slaves) != 3 {
		t.Fatalf("leader %q, pid %q, %d agents", s.Leader, s.PID, len(s.Slaves))
	}
	agents := map[string]netip.Addr{}
	for _, a := range s.Slaves {
		pid, err := ParsePID(a.PID)
		if err != nil {
			t.Fatal(err)
		}
		agents[a.ID], _ = pid.Addr()
	}
	type row struct{ framework, instance, ips, autoIPs, ports string }
	var got []row
	for _, f := range s.Frameworks {
		for i := range f.Tasks {
			task := &f.Tasks[i]
			if !task.Running() {
				continue
			}
			agent := agents[task.SlaveID]
			ports, err := ParsePorts(task.Resources.Ports)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, row{
				FrameworkName(f.Name, false), InstanceLabel(TaskLabel(task.Name, false), task.ID, task.SlaveID),
				fmt.Sprint(task.IPs(DefaultIPSources, agent)), fmt.Sprint(task.IPs([]string{"autoip", "netinfo", "host"}, agent)),
				fmt.Sprint(ports),
			})
		}
	}
	want := []row{
		{"marathon", "search-fqfyn-s0", "[10.0.1.21]", "[10.0.1.21]", "[31101]"},
		{"marathon", "search-ia9ta-s0", "[10.0.1.21]", "[10.0.1.21]", "[31102]"},
		{"marathon", "search-eio6j-s1", "[10.0.1.22]", "[10.0.1.22]", "[31201]"},
		{"marathon", "web-kbrou-s1", "[172.17.0.2]", "[10.0.1.22]", "[31301 31302]"},
		{"marathon", "web-grm4c-s2", "[172.17.0.3]", "[10.0.1.23]", "[31401 31402]"},
		{"marathon", "apiserver-myservice-r1q9r-s2", "[10.0.1.23 2001:db8:1::23]", "[10.0.1.23 2001:db8:1::23]", "[31501]"},
		{"marathon.prod", "apiserver-myservice-8s6j1-s1", "[10.0.1.22]", "[10.0.1.22]", "[31601]"},
		{"metronome", "backup-7rotk-s0", "[10.0.1.21]", "[10.0.1.21]", "[]"},
		{"myframework", "worker-1-jm7ty-s2", "[192.168.50.7]", "[192.168.50.7]", "[]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("running tasks:\n got %v\nwant %v", got, want)
	}
}
