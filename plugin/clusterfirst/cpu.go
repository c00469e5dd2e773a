package clusterfirst

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The CPU gate. A long run queue means overload only while the process
// uses the CPU it may have: queries then arrive faster than it serves them,
// and dropping some is what gives the rest their answers. The queue grows
// as long for reasons dropping cannot fix — another process busy on the
// same core, a CPU limit's throttling, a stop, the collector's idle
// workers — and then the process is not using the CPU it may: shedding
// would lose lookups that a few milliseconds' patience would answer.
// So nothing is shed unless, over the last cpuWindow, the process used at
// least busyOpen of the CPU it may use; once shedding, it goes on while it
// uses at least busyHold (shedding itself frees some CPU, and the kernel's
// work on the process's packets, in softirq, is not the process's time:
// overloaded at 4× on one core of this project's VM, the server's core
// was 10% softirq and the process read 0.73-0.82 of it, so a hold at 0.75
// ended episodes every few hundred milliseconds).
const (
	busyOpen = 0.9
	busyHold = 0.6
	// cpuWindow spans many CFS periods (100 ms by default), so that a
	// process under a CPU limit is judged by what its quota lets it use,
	// not by a burst inside one period; and it is longer than the bursts
	// of work a server does besides queries (a collection over a large
	// heap, a zone or hosts file read again: 300-400 ms of a whole core
	// measured by test/clusterfirstcond, which a 100 ms window took for
	// overload and shed for, 2,144 queries in a minute).
	cpuWindow = time.Second
	// limitRefresh is how often the CPU the process may use is read
	// again: a pod's limit can change in place, and Go re-reads it too.
	limitRefresh = time.Second
)

// processCPU is the CPU time every thread of the process has used.
func processCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("process CPU clock: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// allowedCPU is the CPU the process may use, in cores: the least of
// GOMAXPROCS (the Go code's parallelism), the CPUs its affinity allows and
// its cgroup's CPU limit (which Go rounds up, to 2 at least, for
// GOMAXPROCS: a 300m limit is 0.3 here, 2 there).
func allowedCPU() float64 {
	n := float64(runtime.GOMAXPROCS(0))
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil && set.Count() > 0 {
		n = min(n, float64(set.Count()))
	}
	if limit, ok := cgroupCPULimit(procRoot); ok {
		n = min(n, limit)
	}
	return n
}

// procRoot is where /proc/self/cgroup and mountinfo are read from (tests
// point it elsewhere through cgroupCPULimit's argument).
const procRoot = "/proc/self"

// cgroupCPULimit is the tightest CPU limit, in cores, of the process's
// cgroup and its ancestors (a limit on a parent binds its children), for
// cgroup v2 (cpu.max) and v1 (cpu.cfs_quota_us over cpu.cfs_period_us).
// ok is false with no limit, or where none can be read.
func cgroupCPULimit(proc string) (limit float64, ok bool) {
	mounts, err := cgroupMounts(filepath.Join(proc, "mountinfo"))
	if err != nil {
		return 0, false
	}
	paths, err := cgroupPaths(filepath.Join(proc, "cgroup"))
	if err != nil {
		return 0, false
	}
	limit = math.Inf(1)
	for _, m := range mounts {
		path, found := paths[m.version]
		if !found {
			continue
		}
		dir, inside := m.hostPath(path)
		if !inside {
			continue
		}
		for {
			if l, has := readCPULimit(dir, m.version); has {
				limit = min(limit, l)
			}
			if dir == m.point {
				break
			}
			dir = filepath.Dir(dir)
		}
	}
	if math.IsInf(limit, 1) {
		return 0, false
	}
	return limit, true
}

// The versions of the cgroup hierarchies a CPU limit may sit in.
const (
	cgroupV1 = 1 // the hierarchy with the cpu controller
	cgroupV2 = 2 // the unified hierarchy
)

// cgroupMount is a mount of a hierarchy that can hold a CPU limit.
type cgroupMount struct {
	version int
	root    string // the cgroup mounted there (a container sees its own as /)
	point   string // where it is mounted
}

// hostPath is where the cgroup path of /proc/self/cgroup is in this mount.
func (m cgroupMount) hostPath(path string) (string, bool) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

// cgroupMounts reads the cgroup2 mounts and the v1 mounts of the cpu
// controller from a mountinfo file: "ID PARENT MAJ:MIN ROOT POINT OPTS
// [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
func cgroupMounts(mountinfo string) ([]cgroupMount, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := indexOf(fields, "-")
		if sep < 5 || sep+3 > len(fields) {
			continue
		}
		m := cgroupMount{root: unescape(fields[3]), point: unescape(fields[4])}
		switch fstype, super := fields[sep+1], fields[sep+3]; {
		case fstype == "cgroup2":
			m.version = cgroupV2
		case fstype == "cgroup" && hasOption(super, "cpu"):
			m.version = cgroupV1
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// cgroupPaths reads /proc/self/cgroup: "ID:CONTROLLERS:PATH", the unified
// hierarchy's line with ID 0 and no controllers.
func cgroupPaths(file string) (map[int]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	paths := map[int]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			paths[cgroupV2] = path
		case hasOption(controllers, "cpu"):
			paths[cgroupV1] = path
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("no cgroup with a CPU limit in " + file)
	}
	return paths, nil
}

// readCPULimit reads the limit a cgroup directory sets, if any.
func readCPULimit(dir string, version int) (float64, bool) {
	if version == cgroupV2 {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return 0, false
		}
		quota, period, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		return ratio(quota, period)
	}
	quota, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	period, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return ratio(strings.TrimSpace(string(quota)), strings.TrimSpace(string(period)))
}

// ratio is quota/period for positive numbers ("max" and -1 are no limit).
func ratio(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseFloat(quota, 64)
	p, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return q / p, true
}

func indexOf(fields []string, s string) int {
	for i, f := range fields {
		if f == s {
			return i
		}
	}
	return -1
}

// hasOption tells whether a comma-separated list holds opt.
func hasOption(list, opt string) bool {
	for o := range strings.SplitSeq(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash (\040 and so on).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cpuMeter tells how busy the process was over the last cpuWindow, against
// the CPU it may use: readings of the process's CPU clock against the
// monotonic clock, kept at least cpuStep apart in a ring, so that the ring
// spans the window however often the sampler runs (under overload it
// waits to run too).
type cpuMeter struct {
	wall, cpu []time.Duration // ring; next is the slot the next reading goes to
	next      int
	filled    int // readings in the ring, up to its length
	allowed   float64
	readAt    time.Duration // when allowed was last read
	// allowedCPU and processCPU, replaceable in tests.
	readAllowed func() float64
	readCPU     func() (time.Duration, error)
}

// cpuStep is the least time between two kept readings; the ring holds
// more than cpuWindow/cpuStep of them.
const (
	cpuStep  = cpuWindow / 50
	cpuSlots = 64
)

func newCPUMeter() *cpuMeter {
	return &cpuMeter{wall: make([]time.Duration, cpuSlots), cpu: make([]time.Duration, cpuSlots),
		readAllowed: allowedCPU, readCPU: processCPU, readAt: -limitRefresh}
}

// busy reads the clocks at now (monotonic) and returns the share of the
// allowed CPU the process used since the newest kept reading at least a
// window old; 0 until there is one, or when the clock cannot be read (a
// server that cannot tell is never judged overloaded). recent is the same
// share over the last shortWindow.
func (m *cpuMeter) busy(now time.Duration) (busy, recent float64) {
	if now-m.readAt >= limitRefresh {
		m.allowed, m.readAt = m.readAllowed(), now
	}
	cpu, err := m.readCPU()
	if err != nil {
		return 0, 0
	}
	last := (m.next - 1 + len(m.wall)) % len(m.wall)
	if m.filled == 0 || now-m.wall[last] >= cpuStep {
		m.wall[m.next], m.cpu[m.next] = now, cpu
		m.next = (m.next + 1) % len(m.wall)
		m.filled = min(m.filled+1, len(m.wall))
	}
	if m.allowed <= 0 {
		return 0, 0
	}
	return m.over(now, cpu, cpuWindow), m.over(now, cpu, shortWindow)
}

// shortWindow is the CPU gate's window when a listener's queue overflows:
// half a CFS period. An overflow is the proof that the queue stands; the
// window only tells a process that runs from one that is throttled,
// stopped or kept off its core (which at half its CPU does not fill a
// default buffer: test/clusterfirstcond).
const shortWindow = 50 * time.Millisecond

// over is the share of the allowed CPU used since the newest kept reading
// at least w old (a ticker may fire a little early: nine tenths of w is a
// whole one).
func (m *cpuMeter) over(now, cpu, w time.Duration) float64 {
	for i := 1; i <= m.filled; i++ {
		k := (m.next - i + len(m.wall)) % len(m.wall)
		if span := now - m.wall[k]; span >= w*9/10 {
			return float64(cpu-m.cpu[k]) / (float64(span) * m.allowed)
		}
	}
	return 0
}
