package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The fixed names of what a run creates on the host, fixed so that a run
// finds and removes what a killed one left.
const (
	netnsName = "schemadns-e2e"
	netnsPath = "/var/run/netns/" + netnsName
	// stateDir holds containerd's and kubelet's roots, the API server's
	// files, the logs and the pods' network namespaces (containerd's
	// netns_mounts_under_state_dir).
	stateDir = "/var/lib/schemadns-e2e"
	// cgroupName is kubelet's cgroupRoot, in every v1 hierarchy: all pods'
	// cgroups are below it.
	cgroupName = "schemadns-e2e"
	cgroupFS   = "/sys/fs/cgroup"
)

// insideEnv marks the run inside the network namespace.
const insideEnv = "SCHEMADNS_E2E_INNER"

// Inside tells whether this is the run inside the network namespace.
func Inside() bool { return os.Getenv(insideEnv) != "" }

// Host runs on the host: it clears leftovers, creates the network
// namespace, runs this program again inside it (the same arguments) and
// clears everything again; keep (-keep) leaves the cluster running
// instead, and deadline (-deadline, 0 for none) bounds the inner run.
func Host(keep bool, deadline time.Duration) error {
	if os.Geteuid() != 0 {
		return errors.New("make e2e runs a kubelet and containerd: run it as root")
	}
	if err := refuseOverKept(); err != nil {
		return err
	}
	if err := cleanHost(); err != nil {
		return fmt.Errorf("clear an earlier run: %w", err)
	}
	runErr := runInner(keep, deadline)
	if keep {
		return errors.Join(runErr, announceKept())
	}
	return errors.Join(runErr, cleanHost())
}

// runInner creates the namespace and runs this program inside it, passing
// SIGINT and SIGTERM on so that the inner run stops its children.
func runInner(keep bool, deadline time.Duration) error {
	if err := createNetns(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	// nsenter --net switches the network namespace only: kubelet and
	// containerd must share the host's mounts (ip netns exec would give
	// each its own mount namespace).
	cmd := exec.Command("nsenter", append([]string{"--net=" + netnsPath, self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if keep {
		// A session of its own, with no terminal: the kept cluster's
		// processes are all below it, and a hangup of ours reaches none.
		// Our signals are passed on below.
		cmd.SysProcAttr.Setsid = true
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the inner run: %w", err)
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The inner run stops itself at the deadline; should it not, it is
	// told to a little later, then killed (the cleanup follows either way).
	var overdue <-chan time.Time
	if deadline > 0 {
		overdue = time.After(deadline + 3*time.Minute)
	}
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("inner run: %w", err)
			}
			return nil
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "e2e: %v: stopping the cluster\n", s)
			_ = cmd.Process.Signal(s)
		case <-overdue:
			fmt.Fprintf(os.Stderr, "e2e: past the deadline (%s): stopping the cluster\n", deadline)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			overdue = nil
			go func() {
				time.Sleep(time.Minute)
				_ = cmd.Process.Kill()
			}()
		}
	}
}

// createNetns creates the node's network namespace with loopback up.
func createNetns() error {
	if err := run("ip", "netns", "add", netnsName); err != nil {
		return err
	}
	return run("ip", "-n", netnsName, "link", "set", "lo", "up")
}

// cleanHost removes everything a run creates, whether it ended well, failed
// or was killed: processes, mounts, cgroups, the network namespace, the
// state directory. Removing what is not there is no error.
func cleanHost() error {
	var errs []error
	errs = append(errs, killLeftovers())
	errs = append(errs, unmountUnder(stateDir))
	errs = append(errs, removeCgroups())
	errs = append(errs, removeLogLinks())
	errs = append(errs, removeStaleShimSockets())
	if exists(netnsPath) {
		if err := run("ip", "netns", "delete", netnsName); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(stateDir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", stateDir, err))
	}
	return errors.Join(errs...)
}

// killLeftovers kills every process of a run: those in the node's network
// namespace (the control plane, containerd, its shims, kubelet,
// host-network pods), those in the pods' cgroups, and any that names the
// state directory. It repeats until none is left, for a few seconds.
func killLeftovers() error {
	killed := map[int]bool{}
	for range 100 {
		left := runProcesses()
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed[pid] = true
		}
		// A killed process leaves the namespace and its cgroup before it
		// is gone: wait until none of them is listed in /proc at all.
		if len(left) == 0 && !anyExists(killed) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left := runProcesses(); len(left) > 0 {
		return fmt.Errorf("processes of an e2e run would not die: %v", left)
	}
	return nil // a PID still listed was reused by another process
}

// anyExists tells whether any of the processes is still in /proc.
func anyExists(pids map[int]bool) bool {
	for pid := range pids {
		if exists("/proc/" + strconv.Itoa(pid)) {
			return true
		}
	}
	return false
}

// runProcesses lists the PIDs that belong to a run.
func runProcesses() []int {
	match := runMatcher()
	self := os.Getpid()
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		if match(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runMatcher tells whether a process belongs to a run: it is in the node's
// network namespace (the control plane, containerd, its shims, kubelet,
// host-network pods), in the pods' cgroups, or its command line names the
// state directory.
func runMatcher() func(pid int) bool {
	nodeNet := nsID(netnsPath)
	inCgroup := cgroupProcs()
	return func(pid int) bool {
		dir := "/proc/" + strconv.Itoa(pid)
		return nodeNet != "" && nsID(dir+"/ns/net") == nodeNet ||
			inCgroup[pid] ||
			cmdlineNames(dir, stateDir)
	}
}

// nsID identifies a namespace by its link target (net:[inode]), or "".
func nsID(path string) string {
	if strings.HasPrefix(path, "/proc/") {
		id, _ := os.Readlink(path)
		return id
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("net:[%d]", st.Ino)
}

// cmdlineNames tells whether the process's command line mentions s.
func cmdlineNames(procDir, s string) bool {
	b, err := os.ReadFile(procDir + "/cmdline")
	return err == nil && strings.Contains(string(b), s)
}

// cgroupProcs returns the PIDs in any cgroup below cgroupName.
func cgroupProcs() map[int]bool {
	pids := map[int]bool{}
	for _, dir := range cgroupDirs() {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids[pid] = true
			}
		}
	}
	return pids
}

// cgroupDirs lists cgroupName and every cgroup below it, in every
// hierarchy, deepest first.
func cgroupDirs() []string {
	var dirs []string
	hierarchies, _ := os.ReadDir(cgroupFS)
	for _, h := range hierarchies {
		root := filepath.Join(cgroupFS, h.Name(), cgroupName)
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return depth(dirs[i]) > depth(dirs[j]) })
	return dirs
}

func depth(path string) int { return strings.Count(path, "/") }

// removeCgroups removes the pods' cgroups, children first (rmdir of an
// empty cgroup; the processes are gone by now).
func removeCgroups() error {
	var errs []error
	for _, dir := range cgroupDirs() {
		if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// unmountUnder unmounts every mount at or below dir, deepest first: kubelet
// bind-mounts its root onto itself and mounts the pods' volumes inside it;
// containerd mounts the containers' root file systems and the pods' network
// namespaces under its state directory.
func unmountUnder(dir string) error {
	for range 10 {
		points := mountsUnder(dir)
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
	if left := mountsUnder(dir); len(left) > 0 {
		return fmt.Errorf("mounts left under %s: %v", dir, left)
	}
	return nil
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMount(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return depth(points[i]) > depth(points[j]) })
	return points
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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

// containerLogLinks is where kubelet links each container's log, whatever
// its podLogsDir (the pods' logs themselves are in the state directory).
const containerLogLinks = "/var/log/containers"

// removeLogLinks removes kubelet's links to our pods' logs.
func removeLogLinks() error {
	entries, err := os.ReadDir(containerLogLinks)
	if err != nil {
		return nil // no kubelet ever ran here
	}
	var errs []error
	for _, e := range entries {
		link := filepath.Join(containerLogLinks, e.Name())
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, stateDir+"/") {
			if err := os.Remove(link); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// shimSockets is where containerd 1.6's shims put their sockets, whatever
// its state directory.
const shimSockets = "/run/containerd/s"

// removeStaleShimSockets removes the sockets of shims that are gone (a
// connection is refused): ours, once killed; a live shim of another
// containerd still accepts.
func removeStaleShimSockets() error {
	entries, err := os.ReadDir(shimSockets)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(shimSockets, e.Name())
		c, err := net.DialTimeout("unix", p, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// run runs a command, its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
