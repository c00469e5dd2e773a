//go:build unix && !linux

package childproc

import "syscall"

// Attr puts a child in its own process group, so that KillGroup reaches
// everything it forks. Without Linux's Pdeathsig a child can outlive a test
// binary that dies without running Stop.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
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
