package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/schemadns/schemadns/internal/procstat"
)

// MemoryCgroup is the directory of a process's v1 memory cgroup.
func MemoryCgroup(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",memory,") {
			return filepath.Join(cgroupFS, "memory", parts[2]), nil
		}
	}
	return "", fmt.Errorf("process %d has no memory cgroup", pid)
}

// PodCgroup is the memory cgroup of the pod with uid, or "".
func PodCgroup(uid string) string {
	root := filepath.Join(cgroupFS, "memory", cgroupName, "kubepods")
	for _, pattern := range []string{"*/pod" + uid, "pod" + uid} {
		if m, _ := filepath.Glob(filepath.Join(root, pattern)); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// CgroupPID is the first process of a cgroup.
func CgroupPID(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return 0, err
	}
	var pid int
	_, err = fmt.Sscan(string(b), &pid)
	return pid, err
}

// ReadInt reads the number a file holds (a cgroup's counter); 0 if it
// cannot.
func ReadInt(path string) int64 {
	b, _ := os.ReadFile(path)
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// ControlPlaneRSS is the RSS of the cluster's process named comm.
func ControlPlaneRSS(comm string) (int64, error) {
	pid, err := ControlPlanePID(comm)
	if err != nil {
		return 0, err
	}
	rss, _, err := procstat.RSS(pid)
	return rss, err
}

// ControlPlanePID finds the cluster's process of the program name
// (hack/tools.sh names its binaries name-VERSION): its command line names
// the state directory.
func ControlPlanePID(name string) (int, error) {
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		argv0, _, _ := strings.Cut(string(b), "\x00")
		base := filepath.Base(argv0)
		if (base == name || strings.HasPrefix(base, name+"-v")) && strings.Contains(string(b), stateDir) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process of this cluster", name)
}
