package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// OOMWatch counts the OOM kills containerd reports (its /tasks/oom
// events), by pod. Kubelet's container status keeps only the last
// termination, and a container killed twice while the API server is down
// would show once; the runtime sees each.
type OOMWatch struct {
	cmd   *exec.Cmd
	done  chan struct{}
	mu    sync.Mutex
	byPod map[string]int
}

// WatchOOM starts counting; Stop ends it and returns the counts.
func (n *Node) WatchOOM(ctx context.Context) (*OOMWatch, error) {
	w := &OOMWatch{done: make(chan struct{}), byPod: map[string]int{}}
	w.cmd = exec.CommandContext(ctx, "ctr", "--address", n.sock, "events")
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("ctr events: %w", err)
	}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// "<time> <namespace> /tasks/oom {"container_id":"…"}"
			_, event, ok := strings.Cut(sc.Text(), " /tasks/oom ")
			if !ok {
				continue
			}
			var oom struct {
				ContainerID string `json:"container_id"`
			}
			if json.Unmarshal([]byte(event), &oom) != nil {
				continue
			}
			pod := n.podOfContainer(ctx, oom.ContainerID)
			w.mu.Lock()
			w.byPod[pod]++
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// podOfContainer names the pod of a container by the label kubelet gives
// it, or returns the container's ID.
func (n *Node) podOfContainer(ctx context.Context, id string) string {
	out, err := n.ctr(ctx, "containers", "info", id)
	if err != nil {
		return id
	}
	var info struct {
		Labels map[string]string `json:"Labels"`
	}
	if json.Unmarshal([]byte(out), &info) != nil || info.Labels["io.kubernetes.pod.name"] == "" {
		return id
	}
	return info.Labels["io.kubernetes.pod.name"]
}

// Counts are the kills so far, by pod.
func (w *OOMWatch) Counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.byPod {
		out[k] = v
	}
	return out
}

// Stop ends the watch and returns the counts.
func (w *OOMWatch) Stop() map[string]int {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
	<-w.done
	_ = w.cmd.Wait()
	return w.Counts()
}
