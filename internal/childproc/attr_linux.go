package childproc

import "syscall"

// Attr puts a child in its own process group, so that KillGroup reaches
// everything it forks, and asks the kernel to kill it when the test binary
// dies for any reason (panic, SIGKILL, `go test` timeout), so that no server
// outlives its test. Pdeathsig fires when the thread that forked exits; the
// Go runtime does not retire threads unless a goroutine exits while locked to
// one, which neither this package nor its callers do.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// KillGroup kills the process group that pid leads.
func KillGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// TerminateGroup asks the process group that pid leads to exit, letting it
// clean up.
func TerminateGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
}
