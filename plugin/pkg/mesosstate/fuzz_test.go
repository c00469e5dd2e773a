package mesosstate

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FuzzDecode: any body either decodes to a state whose leader is a PID
// that formats back to the same text, or is refused; never a panic. The
// helpers DNS calls on an accepted state do not panic either.
func FuzzDecode(f *testing.F) {
	f.Add(readFixture(f, "testdata/small.json"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := Decode(body)
		if err != nil {
			if s != nil {
				t.Fatalf("a state with the error %v", err)
			}
			return
		}
		pid, err := ParsePID(s.Leader)
		if err != nil {
			t.Fatalf("accepted leader %q: %v", s.Leader, err)
		}
		if pid.String() != s.Leader {
			t.Fatalf("leader %q formats back as %q", s.Leader, pid.String())
		}
		again, err := ParsePID(pid.String())
		if err != nil || again != pid {
			t.Fatalf("leader %q: %+v parses back as %+v, %v", s.Leader, pid, again, err)
		}
		agent := netip.MustParseAddr("192.0.2.1")
		for _, f := range s.Frameworks {
			_ = FrameworkName(f.Name, false)
			for i := range f.Tasks {
				task := &f.Tasks[i]
				_ = task.IPs(ValidIPSources, agent)
				_ = InstanceLabel(TaskLabel(task.Name, true), task.ID, task.SlaveID)
				if ports, err := ParsePorts(task.Resources.Ports); len(ports) > MaxPortsPerTask || err != nil && ports != nil {
					t.Fatalf("ParsePorts(%q) = %d ports, %v", task.Resources.Ports, len(ports), err)
				}
			}
		}
	})
}

// FuzzParsePorts: any text either gives at most MaxPortsPerTask ports in
// 1-65535 which, written back as ranges, parse to the same ports, or is
// refused with no ports.
func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"[31000-31002, 31005-31005]", "[]", "", "[1-65535]", "[5-1]", "[0-0]", "[80]", "[1-2,3-4]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ports, err := ParsePorts(text)
		if err != nil {
			if ports != nil {
				t.Fatalf("ParsePorts(%q): ports with the error %v", text, err)
			}
			return
		}
		if len(ports) > MaxPortsPerTask || slices.Contains(ports, 0) {
			t.Fatalf("ParsePorts(%q) = %d ports, %v", text, len(ports), ports)
		}
		again, err := ParsePorts(formatPorts(ports))
		if err != nil || !slices.Equal(again, ports) {
			t.Fatalf("ParsePorts(%q) = %v, which reads back as %v, %v", text, ports, again, err)
		}
	})
}

// formatPorts writes ports as Mesos would, one range per run of
// consecutive ports.
func formatPorts(ports []uint16) string {
	var ranges []string
	for i := 0; i < len(ports); {
		j := i
		for j+1 < len(ports) && ports[j+1] == ports[j]+1 {
			j++
		}
		ranges = append(ranges, fmt.Sprintf("%d-%d", ports[i], ports[j]))
		i = j + 1
	}
	return "[" + strings.Join(ranges, ", ") + "]"
}
