package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine are the facts of the host that the figures depend on.
type machine struct {
	CPUModel    string
	CPUs        int    // nproc
	CPUMHz      string // of the first CPU, as /proc/cpuinfo says
	MemTotal    string
	Kernel      string
	GoVersion   string
	Dnsperf     string
	Binary      string // bin/coredns -version, first line
	LoadStart   string // /proc/loadavg when the run started
	LoadEnd     string
	CPUsAllowed string // the bench's own affinity, from /proc/self/status
}

func readMachine(coredns string) machine {
	m := machine{GoVersion: runtime.Version(), Dnsperf: dnsperfVersion(), LoadStart: loadavg()}
	if out, err := exec.Command(coredns, "-version").Output(); err == nil {
		m.Binary, _, _ = strings.Cut(string(out), "\n")
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		m.CPUs, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case !ok:
			case k == "model name" && m.CPUModel == "":
				m.CPUModel = v
			case k == "cpu MHz" && m.CPUMHz == "":
				m.CPUMHz = v
			}
		}
	}
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(field("/proc/meminfo", "MemTotal:"), " kB"), 64); err == nil {
		m.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
	}
	m.CPUsAllowed = field("/proc/self/status", "Cpus_allowed_list:")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// field is the value after key in a "key value" /proc file.
func field(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
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
