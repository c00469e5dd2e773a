package kubeapi

import "syscall"

// childAttr puts a child in its own process group, so that killGroup reaches
// everything it forks, and asks the kernel to kill it when the test binary
// dies for any reason (panic, SIGKILL, `go test` timeout), so that no etcd or
// kube-apiserver outlives its test. Pdeathsig fires when the thread that
// forked exits; the Go runtime does not retire threads unless a goroutine
// exits while locked to one, which this package never does.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group that pid leads.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// terminateGroup asks the process group that pid leads to exit, letting it
// clean up.
func terminateGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
}
