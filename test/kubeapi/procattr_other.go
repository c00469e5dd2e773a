//go:build unix && !linux

package kubeapi

import "syscall"

// childAttr puts a child in its own process group, so that killGroup reaches
// everything it forks. Without Linux's Pdeathsig a child can outlive a test
// binary that dies without running Stop.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
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
