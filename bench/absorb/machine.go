package main

import (
	"os"
	"os/exec"
	"runtime"
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
