package procstat

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Child is a process that bench/ and soak/ run and measure (a bin/coredns):
// its output goes to a log file, it dies with its parent, and its exit is
// watched.
type Child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartChild starts cmd with its output appended to a new file at logPath.
func StartChild(cmd *exec.Cmd, logPath string) (*Child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", logPath, err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	c := &Child{cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	return c, nil
}

// PID is the child's process ID.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Alive tells whether the child has not exited.
func (c *Child) Alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// Stop ends the child: SIGTERM, then SIGKILL after 5 seconds.
func (c *Child) Stop() {
	if !c.Alive() {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
}
