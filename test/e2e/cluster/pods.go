package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RunningPods lists the running pods labelled k8s-app: app that are not
// terminating (a DaemonSet's pods carry its name there).
func (n *Node) RunningPods(ctx context.Context, ns, app string) ([]corev1.Pod, error) {
	pods, err := n.PodsOf(ctx, ns, map[string]string{"k8s-app": app})
	if err != nil {
		return nil, err
	}
	var live []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			live = append(live, p)
		}
	}
	return live, nil
}

// WaitPodsGone waits until none of the named pods is listed.
func (n *Node) WaitPodsGone(ctx context.Context, ns string, names []string) error {
	return WaitFor(ctx, 2*time.Minute, "pods gone: "+strings.Join(names, ", "), func() error {
		for _, name := range names {
			_, err := n.Client().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				return fmt.Errorf("%s still there", name)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

// WaitDaemonSetReady waits until every pod a DaemonSet schedules is
// ready.
func (n *Node) WaitDaemonSetReady(ctx context.Context, ns, name string) error {
	return WaitFor(ctx, 3*time.Minute, "DaemonSet "+name+" ready", func() error {
		ds, err := n.Client().AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
			return fmt.Errorf("%d of %d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
		}
		return nil
	})
}

// Killed is how long the killed pods took to be Ready again: the first
// and the last.
type Killed struct{ First, Last time.Duration }

// KillAndWait SIGKILLs a container of each pod (the first, or the one
// named) through the runtime, and waits until kubelet has restarted each
// and it is Ready.
func (n *Node) KillAndWait(ctx context.Context, pods []corev1.Pod, container string) (Killed, error) {
	var k Killed
	before := map[string]int32{}
	for _, p := range pods {
		st, err := containerStatus(p, container)
		if err != nil {
			return k, err
		}
		before[p.Name] = st.RestartCount
	}
	at := time.Now()
	for _, p := range pods {
		st, _ := containerStatus(p, container)
		id := strings.TrimPrefix(st.ContainerID, "containerd://")
		if _, err := n.ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
			return k, err
		}
	}
	back := map[string]bool{}
	err := PollUntil(ctx, 3*time.Minute, 100*time.Millisecond, "killed pods restarted and Ready", func() error {
		for _, p := range pods {
			if back[p.Name] {
				continue
			}
			cur, err := n.Client().CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			st, err := containerStatus(*cur, container)
			if err != nil {
				return err
			}
			if st.RestartCount <= before[p.Name] || !PodReady(cur) {
				return fmt.Errorf("%s: restarts %d, ready %v", p.Name, st.RestartCount, PodReady(cur))
			}
			back[p.Name] = true
			if k.First == 0 {
				k.First = time.Since(at)
			}
			k.Last = time.Since(at)
		}
		return nil
	})
	return k, err
}

// containerStatus is the status of a pod's container: the named one, or
// the first.
func containerStatus(p corev1.Pod, name string) (corev1.ContainerStatus, error) {
	for i, st := range p.Status.ContainerStatuses {
		if (name == "" && i == 0) || st.Name == name {
			return st, nil
		}
	}
	return corev1.ContainerStatus{}, fmt.Errorf("pod %s has no status of container %q", p.Name, name)
}

// Restarts sums a pod's container restarts.
func Restarts(p corev1.Pod) int32 {
	var n int32
	for _, st := range p.Status.ContainerStatuses {
		n += st.RestartCount
	}
	return n
}

// Cordon marks the node unschedulable, or schedulable again.
func (n *Node) Cordon(ctx context.Context, on bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	_, err := n.Client().CoreV1().Nodes().Patch(ctx, nodeName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// Evict asks the Eviction API to evict a pod.
func (n *Node) Evict(ctx context.Context, ns, pod string) error {
	return n.Client().PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
	})
}
