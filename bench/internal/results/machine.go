package results

import (
	"os"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// Machine are the facts of the host that the figures depend on: those
// every tool's report prints, and what only the bench reads. In
// benchmarks.json they are one object, as they always were.
type Machine struct {
	toolreport.Machine
	Dnsperf     string
	CPUsAllowed string // the bench's own affinity, from /proc/self/status
}

// ReadMachine reads the facts of this host and of the binary coredns.
func ReadMachine(coredns string) Machine {
	m := Machine{Machine: toolreport.ReadMachine(coredns), Dnsperf: perf.DnsperfVersion()}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				m.CPUsAllowed = strings.TrimSpace(v)
			}
		}
	}
	return m
}
