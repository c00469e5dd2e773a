package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine are the facts of the host the figures depend on (bench's
// machine.go reads the same, and dnsperf's version, which is not used
// here).
type machine struct {
	CPUModel, CPUMHz string
	CPUs             int
	Kernel           string
	GoVersion        string
	Binary           string // bin/coredns -version, first line
	LoadStart        string
	LoadEnd          string
}

func readMachine(coredns string) machine {
	m := machine{GoVersion: runtime.Version(), LoadStart: loadavg()}
	if out, err := exec.Command(coredns, "-version").Output(); err == nil {
		m.Binary, _, _ = strings.Cut(string(out), "\n")
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case !ok:
			case k == "processor": // the machine's, whatever this process is pinned to
				m.CPUs++
			case k == "model name" && m.CPUModel == "":
				m.CPUModel = v
			case k == "cpu MHz" && m.CPUMHz == "":
				m.CPUMHz = v
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuBusy is the time one CPU spent running processes, from /proc/stat
// (seconds): user, nice, system and steal, as bench reads it (interrupts
// left out: on loopback they are mostly the run's own packets).
func cpuBusy(cpu int) (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	prefix := fmt.Sprintf("cpu%d ", cpu)
	for line := range strings.SplitSeq(string(b), "\n") {
		fields := strings.Fields(line)
		if !strings.HasPrefix(line, prefix) || len(fields) < 9 {
			continue
		}
		var busy uint64
		for _, i := range []int{1, 2, 3, 8} { // user nice system steal
			v, _ := strconv.ParseUint(fields[i], 10, 64)
			busy += v
		}
		return float64(busy) / 100, nil
	}
	return 0, fmt.Errorf("/proc/stat has no %q line", prefix)
}
