package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// A cluster kept by -keep runs on after the runner: its daemons are
// started detached (detachedAttr, detachedLauncher) and their PIDs
// recorded in keptPIDs, so that a later run refuses to start over it and
// bin/e2e -clean stops it.

// keptPIDs lists the processes of a cluster kept by -keep, one "PID NAME"
// a line: each daemon as it starts, then, once the run ends, every
// process of the run (the daemons, containerd's shims, the pods).
func keptPIDs() string { return path("kept.pids") }

// keptKubectl is a link to the kubectl of the run, for the look around.
func keptKubectl() string { return path("bin", "kubectl") }

// keptKubeconfig is the admin kubeconfig kubeapi writes in its WorkDir
// (startAPI).
func keptKubeconfig() string { return path("kubeapi", "kubeconfig") }

// detachedAttr starts a daemon of a kept cluster: in a session of its own,
// so that neither the runner's end nor a signal to the runner's process
// group or terminal reaches it, and with no parent-death signal.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// recordKept appends a daemon's PID to keptPIDs.
func recordKept(pid int, name string) error {
	f, err := os.OpenFile(keptPIDs(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d %s\n", pid, name)
	return errors.Join(err, f.Close())
}

// detachedLauncher writes a script that runs bin for internal/kubeapi (etcd,
// kube-apiserver) so that it outlives the runner. kubeapi starts its
// servers with a parent-death signal and their output through pipes into
// the runner, both of which would end them with it. The script records its
// PID, sends the output to a log of its own and execs bin through setpriv,
// which clears the signal. bin keeps the script's PID and process group,
// so kubeapi's Kill (of the group) still stops it, as the API server
// restarts of the relist checks need.
func detachedLauncher(name, bin string) (string, error) {
	if err := os.MkdirAll(path("bin"), 0o755); err != nil {
		return "", err
	}
	script := path("bin", name)
	text := fmt.Sprintf(`#!/bin/sh
# %s of a cluster kept by bin/e2e -keep (test/e2e/cluster/keep.go).
echo "$$ %s" >>%s
exec >>%s 2>&1
exec setpriv --pdeathsig clear %s "$@"
`, name, name, shellQuote(keptPIDs()), shellQuote(path("logs", name+".log")), shellQuote(bin))
	return script, os.WriteFile(script, []byte(text), 0o755)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// keptProcess is one line of keptPIDs.
type keptProcess struct {
	pid  int
	name string
}

// readKept reads keptPIDs; a missing file is no kept cluster.
func readKept() ([]keptProcess, error) {
	b, err := os.ReadFile(keptPIDs())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseKept(string(b)), nil
}

// parseKept parses keptPIDs's lines. A restarted daemon (kubelet, the API
// server) has a line for every start; keptRunning skips the dead ones.
func parseKept(text string) []keptProcess {
	var procs []keptProcess
	for _, line := range strings.Split(text, "\n") {
		pidText, name, whole := strings.Cut(line, " ")
		if pid, err := strconv.Atoi(pidText); err == nil && whole {
			procs = append(procs, keptProcess{pid, name})
		}
	}
	return procs
}

// keptRunning returns the recorded processes that still run and still
// belong to the run (a PID reused by another process does not).
func keptRunning() []keptProcess {
	procs, _ := readKept()
	var alive []keptProcess
	match := runMatcher()
	seen := map[int]bool{}
	for _, p := range procs {
		if !seen[p.pid] && match(p.pid) {
			alive = append(alive, p)
		}
		seen[p.pid] = true
	}
	return alive
}

// refuseOverKept stops a new run while a kept cluster runs: starting over
// it would kill what someone kept to look at, without a word. A kept
// cluster whose processes are all gone is cleared like any leftover.
func refuseOverKept() error {
	alive := keptRunning()
	if len(alive) == 0 {
		return nil
	}
	return fmt.Errorf("a cluster kept by an earlier bin/e2e -keep is still running (%s); "+
		"remove it first with: bin/e2e -clean (or make e2e-clean)", describeKept(alive))
}

// describeKept names the cluster's daemons and counts the rest (shims,
// pods).
func describeKept(procs []keptProcess) string {
	var daemons []string
	others := 0
	for _, p := range procs {
		if slices.Contains(keptDaemons, p.name) {
			daemons = append(daemons, fmt.Sprintf("%s %d", p.name, p.pid))
		} else {
			others++
		}
	}
	s := strings.Join(daemons, ", ")
	if others > 0 {
		s += fmt.Sprintf(" and %d processes of shims and pods", others)
	}
	return s
}

// keptDaemons are the names the cluster's own daemons are recorded under.
var keptDaemons = []string{"etcd", "kube-apiserver", "containerd", "kube-controller-manager",
	"kube-scheduler", "kubelet", "kube-proxy"}

// recordKeptRun rewrites keptPIDs, once the runner is done, with every
// process of the run that is left: the daemons under their names, the
// shims and the pods under their command names.
func recordKeptRun() ([]keptProcess, error) {
	named := map[int]string{}
	for _, p := range keptRunning() {
		named[p.pid] = p.name
	}
	var procs []keptProcess
	var b strings.Builder
	for _, pid := range runProcesses() {
		name := named[pid]
		if name == "" {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			name = strings.TrimSpace(string(comm))
		}
		procs = append(procs, keptProcess{pid, name})
		fmt.Fprintf(&b, "%d %s\n", pid, name)
	}
	return procs, os.WriteFile(keptPIDs(), []byte(b.String()), 0o644)
}

// announceKept records what a -keep run left and says how to reach it.
func announceKept() error {
	procs, err := recordKeptRun()
	if err != nil {
		return fmt.Errorf("record the kept cluster's processes: %w", err)
	}
	if len(procs) == 0 {
		fmt.Println("e2e: -keep: no process of the cluster is left running; its files are in " + stateDir +
			"; remove them with: bin/e2e -clean")
		return nil
	}
	fmt.Printf("e2e: the cluster is left running (-keep): %s; PIDs in %s, logs in %s\n",
		describeKept(procs), keptPIDs(), path("logs"))
	if exists(keptKubeconfig()) && exists(keptKubectl()) {
		nsenter := "nsenter --net=" + netnsPath
		fmt.Printf("e2e: kubeconfig: %s (its server is inside the namespace %s)\n", keptKubeconfig(), netnsName)
		fmt.Printf("e2e: reach it with: %s %s --kubeconfig %s get pods -A\n", nsenter, keptKubectl(), keptKubeconfig())
		fmt.Printf("e2e: or a shell in the node's network: %s bash\n", nsenter)
	}
	fmt.Println("e2e: the stub DNS server stopped with the runner: pods no longer resolve upstream names")
	fmt.Println("e2e: stop and remove it all with: bin/e2e -clean (or make e2e-clean); a new run refuses to start until then")
	return nil
}

// linkKubectl links the run's kubectl into the state directory, so that
// the line announceKept prints names no tools directory.
func linkKubectl(kubectl string) error {
	if err := os.MkdirAll(filepath.Dir(keptKubectl()), 0o755); err != nil {
		return err
	}
	_ = os.Remove(keptKubectl())
	return os.Symlink(kubectl, keptKubectl())
}

// Clean is bin/e2e -clean: it stops a kept cluster, or whatever a killed
// run left, and removes it all (cleanHost).
func Clean() error {
	if alive := keptRunning(); len(alive) > 0 {
		fmt.Printf("e2e: stopping the kept cluster: %s\n", describeKept(alive))
	}
	if err := cleanHost(); err != nil {
		return err
	}
	if left := leftovers(); len(left) > 0 {
		return fmt.Errorf("left after the cleanup: %s", strings.Join(left, "; "))
	}
	fmt.Printf("e2e: nothing of a run is left: no process, no mount under %s, no cgroup %s, no namespace %s\n",
		stateDir, cgroupName, netnsName)
	return nil
}

// leftovers looks again, after a cleanup, for anything of a run.
func leftovers() []string {
	var left []string
	if pids := runProcesses(); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	if m := mountsUnder(stateDir); len(m) > 0 {
		left = append(left, fmt.Sprintf("mounts %v", m))
	}
	if c := cgroupDirs(); len(c) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", c))
	}
	for _, p := range []string{netnsPath, stateDir} {
		if exists(p) {
			left = append(left, p)
		}
	}
	return left
}

// KeepUsage tells how to keep the cluster for a look around, on the
// default run's page.
const KeepUsage = `
To look around in the cluster, run ` + "`make e2e E2EFLAGS=-keep`" + ` (or
` + "`E2EFLAGS='-keep -out /tmp/e2e.md'`" + ` to leave this page as it is): the
cluster stays up after the run, even a failed one, every process of it,
pods included, and the run ends by printing its kubeconfig and how to
reach it, through its network namespace:
` + "`nsenter --net=" + netnsPath + " " + stateDir + "/bin/kubectl --kubeconfig " + stateDir + "/kubeapi/kubeconfig get pods -A`" + `.
The processes' PIDs are in ` + "`" + stateDir + "/kept.pids`" + `, their
logs in ` + "`" + stateDir + "/logs`" + `; the stub DNS server stops with the
run. No new run starts while a kept cluster runs: ` + "`make e2e-clean`" + `
(` + "`bin/e2e -clean`" + `) stops it and removes it all, the namespace, the
mounts, the cgroups and the state directory.
`
