// Package procstat reads a process's memory and CPU time, and a CPU's busy
// time, from Linux's /proc, for bench/ and soak/.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS is the process's VmRSS and VmHWM (its peak since start or the last
// ResetPeak), in bytes.
func RSS(pid int) (cur, peak int64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			cur = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	if cur == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return cur, peak, nil
}

// ResetPeak sets the process's VmHWM back to its current RSS (writing 5 to
// /proc/PID/clear_refs, Linux 4.0 and later), so that the peak read later
// is the peak since now.
func ResetPeak(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("reset the peak RSS of %d: %w", pid, err)
	}
	return nil
}

// CPUSeconds is the CPU time (user + system) the process has used, from
// /proc/PID/stat (utime and stime, in USER_HZ = 1/100 s ticks).
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime is field 14, stime 15.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return float64(utime+stime) / 100, nil
}

// CPUBusy is the time one CPU has spent running processes, from
// /proc/stat (seconds): user, nice, system and steal. Interrupt and softirq
// time are left out: on loopback they are mostly the kernel carrying the
// run's own packets, which the kernel does not charge to any process.
func CPUBusy(cpu int) (float64, error) {
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
