package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ContainerUID reads the real uid of a pod's first container's process
// from /proc, through the runtime's task list.
func (n *Node) ContainerUID(ctx context.Context, p corev1.Pod) (string, error) {
	pid, err := n.ContainerPID(ctx, p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("no Uid in /proc/%d/status", pid)
}

// ContainerPID finds the PID of a pod's first container in containerd.
func (n *Node) ContainerPID(ctx context.Context, p corev1.Pod) (int, error) {
	if len(p.Status.ContainerStatuses) == 0 {
		return 0, fmt.Errorf("pod %s has no container status", p.Name)
	}
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := n.ctr(ctx, "tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == id {
			var pid int
			_, err := fmt.Sscan(f[1], &pid)
			return pid, err
		}
	}
	return 0, fmt.Errorf("container %s not in ctr tasks ls", id)
}

// ctr runs ctr against the node's containerd in the k8s.io namespace.
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	out, err := execOutput(ctx, "ctr", append([]string{"--address", n.sock, "-n", "k8s.io"}, args...)...)
	if err != nil {
		return "", err
	}
	return out, nil
}

// execOutput runs a command and returns its stdout; stderr is in the error.
func execOutput(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return string(out), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
