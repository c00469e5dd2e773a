package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// daemon is one process of the cluster.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startDaemon starts bin with attr: a process group of its own that dies
// with us, or a session of its own (detachedAttr). Either way stop reaches
// the group it leads.
func startDaemon(name, logPath string, attr *syscall.SysProcAttr, bin string, args ...string) (*daemon, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &daemon{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.cmd.SysProcAttr = attr
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	return d, nil
}

func (d *daemon) alive() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

func (d *daemon) exitError() error {
	return fmt.Errorf("%s exited: %v (see %s/%s.log)", d.name, d.err, path("logs"), d.name)
}

// stop asks the daemon to stop, and kills it after 10 seconds.
func (d *daemon) stop() {
	if !d.alive() {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
}

// WaitFor polls check every 200 ms until it returns nil or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	return PollUntil(ctx, timeout, 200*time.Millisecond, what, check)
}

// PollUntil polls check every period until it returns nil or timeout
// passes.
func PollUntil(ctx context.Context, timeout, period time.Duration, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), last)
		case <-time.After(period):
		}
	}
}
