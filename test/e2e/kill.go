package main

import (
	"context"
	"fmt"
	"time"
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
	from := time.Now()
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return err
	}
	k, err := e.killAndWait(ctx, pods[:1], "")
	e.rep.assert(section, "kubelet restarts the killed container and it becomes Ready", err == nil,
		"after %.1f s %s", k.last.Seconds(), errText(err))
	if err := sleepCtx(ctx, 15*time.Second); err != nil {
		return err
	}
	e.rep.figure("DNS container killed (SIGKILL through containerd): back Ready after", fmt.Sprintf("%.1f s", k.last.Seconds()))
	// Reported, not a bar: until kubelet sees the container gone and
	// kube-proxy drops it, queries sent to it are lost (the resolver
	// retries after its timeout) or refused by its pod's network stack.
	e.reportLoad(ctx, section, []phase{{name: "DNS pod killed", from: from, to: time.Now(), leaving: "ours (SIGKILL, restarted)"}})
	return nil
}
