package toolreport

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Machine are the facts of the host that a run's figures depend on. The
// tools keep it in their results (bench's benchmarks.json, soak's
// reliability.json) under these field names.
type Machine struct {
	CPUModel string
	// CPUs are the machine's (the processors of /proc/cpuinfo), whatever
	// the tool itself is pinned to: absorb runs pinned to one CPU.
	CPUs      int
	CPUMHz    string // of the first CPU, as /proc/cpuinfo says
	MemTotal  string // "23.5 GiB"
	Kernel    string
	GoVersion string
	Binary    string // bin/coredns -version, first line
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute
	// averages as the run started and as it ended (the tool sets LoadEnd
	// with LoadAverage): how busy the machine was besides the run.
	LoadStart, LoadEnd string
}

// ReadMachine reads the machine's facts from /proc and the version of the
// CoreDNS binary at coredns (none when coredns is ""), and the load
// average as the run starts.
func ReadMachine(coredns string) Machine {
	m := readMachine(os.DirFS("/proc"))
	if coredns != "" {
		if out, err := exec.Command(coredns, "-version").Output(); err == nil {
			m.Binary, _, _ = strings.Cut(string(out), "\n")
		}
	}
	return m
}

// LoadAverage is /proc/loadavg's 1, 5 and 15 minute averages: "0.70 0.94
// 1.51" ("" if unreadable).
func LoadAverage() string { return loadAverage(os.DirFS("/proc")) }

// readMachine reads what proc, a /proc, says.
func readMachine(proc fs.FS) Machine {
	m := Machine{GoVersion: runtime.Version(), LoadStart: loadAverage(proc)}
	if b, err := fs.ReadFile(proc, "cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case !ok:
			case k == "processor":
				m.CPUs++
			case k == "model name" && m.CPUModel == "":
				m.CPUModel = v
			case k == "cpu MHz" && m.CPUMHz == "":
				m.CPUMHz = v
			}
		}
	}
	if m.CPUs == 0 { // a /proc/cpuinfo of another layout
		m.CPUs = runtime.NumCPU()
	}
	if b, err := fs.ReadFile(proc, "meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					m.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	if b, err := fs.ReadFile(proc, "sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func loadAverage(proc fs.FS) string {
	b, err := fs.ReadFile(proc, "loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Table is the machine's facts as a two-column table, every report's
// Machine section; a tool adds its own rows (how it pinned its processes,
// the version of a load generator) before writing it. A fact not recorded
// (results of an earlier run may lack one) is left out.
func (m Machine) Table() *Table {
	t := NewTable("", "")
	add := func(what, value string) {
		if value != "" {
			t.Row(what, value)
		}
	}
	cpu := []string{}
	if m.CPUModel != "" {
		cpu = append(cpu, m.CPUModel)
	}
	if m.CPUMHz != "" {
		cpu = append(cpu, m.CPUMHz+" MHz")
	}
	add("CPU (/proc/cpuinfo)", strings.Join(cpu, ", "))
	if m.CPUs > 0 {
		add("CPUs", strconv.Itoa(m.CPUs))
	}
	add("memory (MemTotal)", m.MemTotal)
	add("kernel", m.Kernel)
	add("Go", m.GoVersion)
	add("bin/coredns -version", m.Binary)
	if m.LoadEnd != "" {
		add("load average (1, 5, 15 min) at start / end", m.LoadStart+" / "+m.LoadEnd)
	} else {
		add("load average (1, 5, 15 min) at start", m.LoadStart)
	}
	return t
}
