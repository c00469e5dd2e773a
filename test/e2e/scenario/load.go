package scenario

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/e2e/scenario/loadlog"
)

// loadRate is each load pod's lookups per second (two pods: glibc, musl),
// made by loadThreads threads: above the 100/s asked, so that a few
// lookups stalled for a resolver timeout still leave the phase at 100/s.
const (
	loadRate    = 150
	loadThreads = 10
)

// LoadClients are the two load clients of manifests/load.yaml.
var LoadClients = []string{"load-glibc", "load-musl"}

// Phase is a stretch of the load run, for counting its lookups.
type Phase struct {
	Name     string
	From, To time.Time
	// Bar: a failed lookup, or fewer than 100 lookups a second, fails the
	// run here; elsewhere they are reported.
	Bar bool
	// Leaving names whose DNS pods terminate in this phase, if any.
	Leaving string
}

// ReportLoad reads the load pods' logs and reports each phase's lookups.
func (e *Env) ReportLoad(ctx context.Context, section string, phases []Phase) {
	var rows [][]string
	slowWhenLeaving := map[string]int{}
	for _, pod := range LoadClients {
		log, err := e.Cluster.Logs(ctx, AppNS, pod)
		if err != nil {
			e.Report.Fail(section, err.Error())
			continue
		}
		ll := loadlog.Parse(log)
		for _, p := range phases {
			c := ll.Count(p.From, p.To)
			secs := p.To.Sub(p.From).Seconds()
			rate := float64(c.OK+c.Fail) / secs
			leaving := p.Leaving
			if leaving == "" {
				leaving = "none"
			}
			slowWhenLeaving[leaving] += c.Slow
			rows = append(rows, []string{pod, p.Name, leaving, fmt.Sprintf("%.0f", secs), fmt.Sprint(c.OK + c.Fail),
				fmt.Sprint(c.Fail), fmt.Sprint(c.Slow), fmt.Sprintf("%.0f", rate), fmt.Sprint(c.MaxMs)})
			if p.Bar {
				e.Report.Assert(section, fmt.Sprintf("%s: 0 failed lookups during %q", pod, p.Name), c.Fail == 0,
					"%d lookups, %d failed, %d slower than 1 s, max %d ms%s", c.OK+c.Fail, c.Fail, c.Slow, c.MaxMs, c.Examples())
				e.Report.Assert(section, fmt.Sprintf("%s: ≥ 100 lookups/s during %q", pod, p.Name), rate >= 100,
					"%.0f/s", rate)
			} else if c.Fail > 0 {
				e.Report.Figure(fmt.Sprintf("%s: failed lookups during %q", pod, p.Name), fmt.Sprintf("%d%s", c.Fail, c.Examples()))
			}
		}
	}
	for _, leaving := range slices.Sorted(maps.Keys(slowWhenLeaving)) {
		if leaving != "none" {
			e.Report.Figure(fmt.Sprintf("%s: lookups slower than 1 s (a resolver timeout) while DNS pods of %s went", section, leaving), fmt.Sprint(slowWhenLeaving[leaving]))
		}
	}
	e.Report.Table("Lookups per phase ("+section+")",
		[]string{"client", "phase", "DNS pods that went", "seconds", "lookups", "failed", "slower than 1 s", "lookups/s", "max ms"}, rows)
}

// StartLoad creates load clients and waits until they resolve.
func (e *Env) StartLoad(ctx context.Context, manifest []byte, clients []string) error {
	if err := e.Cluster.WaitPodsGone(ctx, AppNS, clients); err != nil {
		return err
	}
	if err := e.Cluster.ApplyManifest(ctx, manifest, e.Placeholders()); err != nil {
		return err
	}
	if err := e.Cluster.WaitPodsReady(ctx, AppNS, clients...); err != nil {
		return err
	}
	// Long enough for the cache to hold the names.
	return Sleep(ctx, 5*time.Second)
}

// StopLoad deletes load clients.
func (e *Env) StopLoad(ctx context.Context, clients []string) {
	for _, p := range clients {
		_ = e.Cluster.Client().CoreV1().Pods(AppNS).Delete(ctx, p, metav1.DeleteOptions{})
	}
}
