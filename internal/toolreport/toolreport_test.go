package toolreport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestDoc: each block ends with a blank line; lines stay in one block
// until End; a table aligns its text columns left and its figures right,
// an empty cell as "| |".
func TestDoc(t *testing.T) {
	var d Doc
	d.Heading(1, "Page")
	d.Para("A paragraph of %d lines.", 1)
	d.Line("- one")
	d.Line("- %s", "two")
	d.End()
	tb := NewTable("shape", "stands for", "MiB", "").TextColumns(2)
	tb.Row("S1", "ClusterIP-heavy", Bold(MiB(3<<20)), "")
	d.Table(tb)
	d.Table(NewTable("a", "b").TextColumns(9))
	d.Heading(2, "Errors")
	d.List([]string{"first", "second"})
	want := "# Page\n\n" +
		"A paragraph of 1 lines.\n\n" +
		"- one\n- two\n\n" +
		"| shape | stands for | MiB | |\n|---|---|--:|--:|\n| S1 | ClusterIP-heavy | **3.0** | |\n\n" +
		"| a | b |\n|---|---|\n\n" +
		"## Errors\n\n- first\n- second\n\n"
	if got := d.String(); got != want {
		t.Errorf("page:\n%s\nwant:\n%s", got, want)
	}
	if tb.Len() != 1 {
		t.Errorf("Len %d, want 1", tb.Len())
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{MiB(0), "–"}, {MiB(77848576), "74.2"},
		{Ratio(1, 4), "0.25"}, {Ratio(0, 4), "–"}, {Ratio(4, 0), "–"},
		{RatioOf(119.2, 208.8, "MiB"), "0.57 (119.2 / 208.8 MiB)"},
		{RatioOf(0, 621.5, "ms, 20 polls each"), "0.00 (0 / 621.5 ms, 20 polls each)"}, {RatioOf(1, 0, "s"), "–"},
		{Trim(30.27), "30.27"}, {Trim(2.5), "2.5"}, {Trim(3), "3"}, {Trim(0.004), "0"},
		{Percent(0.254), "25%"}, {Percent(1), "100%"},
		{Thousands(10000), "10k"}, {Thousands(1500), "1.5k"}, {Thousands(999), "999"},
		{Met(true), "met"}, {Met(false), "not met"},
		{Pairs(map[string]int{"unchanged": 1, "changed": 20}, "%s %d"), "changed 20, unchanged 1"},
		{Pairs(map[string]float64{"file": 8100, "mesosschema": 12000.4}, "%s %.0f q/s"), "file 8100 q/s, mesosschema 12000 q/s"},
		{Pairs(map[string]int{}, "%s %d"), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestReadMachine reads the facts from a /proc of fixed files.
func TestReadMachine(t *testing.T) {
	proc := fstest.MapFS{
		"cpuinfo": {Data: []byte("processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2445.406\n\n" +
			"processor\t: 1\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2600.000\n")},
		"meminfo":              {Data: []byte("MemTotal:       24641536 kB\nMemFree:         1000 kB\n")},
		"sys/kernel/osrelease": {Data: []byte("6.18.44-fc-v782\n")},
		"loadavg":              {Data: []byte("0.70 0.94 1.51 2/345 6789\n")},
	}
	m := readMachine(proc)
	if m.CPUModel != "AMD EPYC" || m.CPUMHz != "2445.406" || m.CPUs != 2 || m.MemTotal != "23.5 GiB" ||
		m.Kernel != "6.18.44-fc-v782" || m.LoadStart != "0.70 0.94 1.51" || !strings.HasPrefix(m.GoVersion, "go") {
		t.Errorf("machine: %+v", m)
	}
	if m := readMachine(fstest.MapFS{}); m.CPUs < 1 || m.LoadStart != "" || m.Kernel != "" {
		t.Errorf("an empty /proc: %+v", m)
	}
}

// TestReadMachineBinary: the binary's version is the first line it prints.
func TestReadMachineBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "coredns")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho CoreDNS-1.15.0\necho linux/amd64\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if m := ReadMachine(bin); m.Binary != "CoreDNS-1.15.0" {
		t.Errorf("binary %q", m.Binary)
	}
	if m := ReadMachine(""); m.Binary != "" {
		t.Errorf("no binary: %q", m.Binary)
	}
}

// TestMachineTable: every fact in a row of its own; facts not recorded
// (an earlier run's results) are left out, the load at the end too.
func TestMachineTable(t *testing.T) {
	var d Doc
	m := Machine{CPUModel: "AMD EPYC", CPUMHz: "2445.406", CPUs: 2, MemTotal: "23.5 GiB", Kernel: "6.18",
		GoVersion: "go1.26.8", Binary: "CoreDNS-1.15.0", LoadStart: "0.70 0.94 1.51", LoadEnd: "1.81 1.56 2.10"}
	tb := m.Table()
	tb.Row("pinning", "none")
	d.Table(tb)
	want := "| | |\n|---|--:|\n" +
		"| CPU (/proc/cpuinfo) | AMD EPYC, 2445.406 MHz |\n| CPUs | 2 |\n| memory (MemTotal) | 23.5 GiB |\n" +
		"| kernel | 6.18 |\n| Go | go1.26.8 |\n| bin/coredns -version | CoreDNS-1.15.0 |\n" +
		"| load average (1, 5, 15 min) at start / end | 0.70 0.94 1.51 / 1.81 1.56 2.10 |\n| pinning | none |\n\n"
	if d.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", d.String(), want)
	}
	var old Doc
	old.Table(Machine{CPUModel: "AMD EPYC", CPUs: 2, GoVersion: "go1.26.8", LoadStart: "1.76 1.50 1.04"}.Table())
	want = "| | |\n|---|--:|\n| CPU (/proc/cpuinfo) | AMD EPYC |\n| CPUs | 2 |\n| Go | go1.26.8 |\n" +
		"| load average (1, 5, 15 min) at start | 1.76 1.50 1.04 |\n\n"
	if old.String() != want {
		t.Errorf("table of an earlier run:\n%s\nwant:\n%s", old.String(), want)
	}
}

// TestCheckGolden: the same page passes, another names its first
// differing line, -update writes it.
func TestCheckGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	if err := CheckGolden(path, "a\n", false); err == nil || !strings.Contains(err.Error(), "-update") {
		t.Errorf("missing golden: %v", err)
	}
	if err := CheckGolden(path, "a\nb\n", true); err != nil {
		t.Fatal(err)
	}
	if err := CheckGolden(path, "a\nb\n", false); err != nil {
		t.Errorf("the same page: %v", err)
	}
	err := CheckGolden(path, "a\nc\n", false)
	if err == nil || !strings.Contains(err.Error(), "page.md:2") || !strings.Contains(err.Error(), `got: "c"`) {
		t.Errorf("another page: %v", err)
	}
	if err := CheckGolden(path, "a\nb\n\nmore", false); err == nil || !strings.Contains(err.Error(), "(end of the page)") {
		t.Errorf("a longer page: %v", err)
	}
}

func TestSection(t *testing.T) {
	s := NewSection("x", "make x")
	page := "# Page\n\ntext\n"
	once := s.Splice(page, "first\n")
	if want := "# Page\n\ntext\n\n" + s.Begin + "\nfirst\n" + s.End + "\n"; once != want {
		t.Fatalf("spliced at the end:\n%q\nwant\n%q", once, want)
	}
	twice := s.Splice(once+"after\n", "second\n")
	if want := "# Page\n\ntext\n\n" + s.Begin + "\nsecond\n" + s.End + "\nafter\n"; twice != want {
		t.Fatalf("spliced in place:\n%q\nwant\n%q", twice, want)
	}
	if got := s.Of(twice); got != s.Begin+"\nsecond\n"+s.End+"\n" {
		t.Fatalf("Of: %q", got)
	}
	if got := s.Carry(twice, "# New page\n"); got != "# New page\n\n"+s.Of(twice) {
		t.Fatalf("Carry: %q", got)
	}
	if got := s.Carry("# Old page without one\n", "# New\n"); got != "# New\n" {
		t.Fatalf("Carry without a section: %q", got)
	}
}
