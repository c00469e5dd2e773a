package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkKill kills one DNS container through the runtime while the load
// clients resolve, and counts what they saw until kubelet has restarted it.
func (e *e2e) checkKill(ctx context.Context) error {
	const section = "8. a DNS pod killed"
	pods, err := e.dnsPods(ctx)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no DNS pod running")
	}
	victim := pods[0]
	before := victim.Status.ContainerStatuses[0].RestartCount
	id := strings.TrimPrefix(victim.Status.ContainerStatuses[0].ContainerID, "containerd://")
	from := time.Now()
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return err
	}
	killed := time.Now()
	if _, err := e.n.ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
		return err
	}
	var restarted time.Duration
	err = waitFor(ctx, 3*time.Minute, "pod "+victim.Name+" restarted and Ready", func() error {
		p, err := e.n.client().CoreV1().Pods(dnsNS).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.ContainerStatuses[0].RestartCount <= before || !podReady(p) {
			return fmt.Errorf("restarts %d, ready %v", p.Status.ContainerStatuses[0].RestartCount, podReady(p))
		}
		restarted = time.Since(killed)
		return nil
	})
	e.rep.assert(section, "kubelet restarts the killed container and it becomes Ready", err == nil,
		"after %.1f s %s", restarted.Seconds(), errText(err))
	if err := sleepCtx(ctx, 15*time.Second); err != nil {
		return err
	}
	e.rep.figure("DNS container killed (SIGKILL through containerd): back Ready after", fmt.Sprintf("%.1f s", restarted.Seconds()))
	// Reported, not a bar: until kubelet sees the container gone and
	// kube-proxy drops it, queries sent to it are lost (the resolver
	// retries after its timeout) or refused by its pod's network stack.
	e.reportLoad(ctx, section, []phase{{name: "DNS pod killed", from: from, to: time.Now(), leaving: "ours (SIGKILL, restarted)"}})
	return nil
}
