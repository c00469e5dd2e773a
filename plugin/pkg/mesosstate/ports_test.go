package mesosstate

import (
	"errors"
	"slices"
	"testing"
)

func TestParsePorts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint16
	}{
		{"", nil},
		{"[]", nil},
		{" [ ] ", nil},
		{"[31000-31000]", []uint16{31000}},
		{"[31000-31002, 31005-31005]", []uint16{31000, 31001, 31002, 31005}},
		{"[31000-31001,31010-31011]", []uint16{31000, 31001, 31010, 31011}},
		{"[80]", []uint16{80}},
		{"[1-1, 65535-65535]", []uint16{1, 65535}},
		{"[031000-031001]", []uint16{31000, 31001}},
	} {
		got, err := ParsePorts(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParsePorts(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParsePortsErrors(t *testing.T) {
	for _, in := range []string{
		"31000-31001", "[31000-31001", "31000-31001]", "[31001-31000]", "[0-10]", "[65535-65536]", "[1-99999999999999999999]",
		"[a-b]", "[31000-]", "[-31000]", "[31000--31001]", "[31000-31001,]", "[,]", "[31000 - 31001]", "[-1-5]", "{31000-31001}",
		"[1-65535, 5-1]",
	} {
		if got, err := ParsePorts(in); !errors.Is(err, ErrBadPorts) || got != nil {
			t.Errorf("ParsePorts(%q) = %v, %v; want ErrBadPorts", in, got, err)
		}
	}
}

// TestParsePortsCap: a task holding every port costs MaxPortsPerTask
// entries, not 65,535.
func TestParsePortsCap(t *testing.T) {
	got, err := ParsePorts("[1-65535]")
	if err != nil || len(got) != MaxPortsPerTask || got[0] != 1 || got[len(got)-1] != MaxPortsPerTask {
		t.Fatalf("ParsePorts([1-65535]) = %d ports, %v", len(got), err)
	}
	got, err = ParsePorts("[31000-31000, 1000-5000, 32000-32001]")
	if err != nil || len(got) != MaxPortsPerTask || got[0] != 31000 || got[1] != 1000 {
		t.Fatalf("ParsePorts of three ranges = %d ports (%v...), %v", len(got), got[:2], err)
	}
	if allocs := testing.AllocsPerRun(10, func() { _, _ = ParsePorts("[1-65535, 1-65535, 1-65535]") }); allocs > 12 {
		t.Errorf("ParsePorts of 196k ports allocates %v times", allocs)
	}
}
