package kube

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/schemadns/schemadns/internal/procstat"
)

// CPU accounting of the churn: where the machine's time went while the
// writers ran, so that the report can say why the write rate is what it is.

// machineBusy is the time all CPUs spent on anything but idle and iowait,
// from /proc/stat, in seconds.
func machineBusy() (float64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[0] != "cpu" {
			continue
		}
		var busy uint64
		for i, v := range fields[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			if i != 3 && i != 4 && i < 8 { // not idle, iowait, nor guest (counted in user)
				busy += n
			}
		}
		return float64(busy) / 100, nil
	}
	return 0, fmt.Errorf("/proc/stat has no cpu line")
}

// pidsOf finds the processes whose program's base name starts with
// binary (the tools cache appends the version) and whose command line
// holds marker (the run's work directory). The program name alone is
// matched: kube-apiserver's arguments name etcd too.
func pidsOf(binary, marker string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		prog, _, _ := strings.Cut(string(b), "\x00")
		if strings.HasPrefix(filepath.Base(prog), binary) && strings.Contains(string(b), marker) {
			if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// cpuMeter reads the CPU time of the run's processes and of the machine.
type cpuMeter struct {
	pids  map[string][]int
	start map[string]float64
}

// newCPUMeter finds the processes: the API server and etcd by the work
// directory in their command lines, the DNS servers and this tool by PID.
func newCPUMeter(e *env) *cpuMeter {
	m := &cpuMeter{pids: map[string][]int{
		"kube-apiserver":                   pidsOf("kube-apiserver", e.work),
		"etcd":                             pidsOf("etcd", e.work),
		"soak (writers, checker, probers)": {os.Getpid()},
	}}
	for _, s := range e.servers {
		m.pids[s.Key] = []int{s.PID()}
	}
	m.start = m.read()
	return m
}

// machineKey is the whole machine's busy time in the readings.
const machineKey = "machine (all processes)"

func (m *cpuMeter) read() map[string]float64 {
	out := map[string]float64{}
	for name, pids := range m.pids {
		for _, pid := range pids {
			if s, err := procstat.CPUSeconds(pid); err == nil {
				out[name] += s
			}
		}
	}
	if b, err := machineBusy(); err == nil {
		out[machineKey] = b
	}
	return out
}

// since is each reading's increase since the meter was made.
func (m *cpuMeter) since() map[string]float64 {
	now := m.read()
	for k := range now {
		now[k] -= m.start[k]
	}
	return now
}
