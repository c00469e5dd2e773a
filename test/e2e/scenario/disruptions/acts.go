package disruptions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/scenario"
	"github.com/schemadns/schemadns/test/e2e/scenario/loadlog"
)

// The disruptions, each returned as what it does and its target.

// killOneReplica SIGKILLs one cluster DNS container.
func (s *Disruptions) killOneReplica() disruption {
	return disruption{name: "one cluster DNS pod SIGKILLed", target: noFailNoSlow, act: func(ctx context.Context) (outcome, error) {
		pods, err := s.DNSPods(ctx)
		if err != nil {
			return outcome{}, err
		}
		if len(pods) == 0 {
			return outcome{}, errors.New("no DNS pod running")
		}
		// The one restarted least, so that kubelet's back-off does not
		// stretch the outage of a pod killed before.
		slices.SortStableFunc(pods, func(a, b corev1.Pod) int { return cmp.Compare(cluster.Restarts(a), cluster.Restarts(b)) })
		k, err := s.Cluster.KillAndWait(ctx, pods[:1], "")
		return outcome{note: fmt.Sprintf("%s back Ready after %.1f s", pods[0].Name, k.Last.Seconds())}, err
	}}
}

// killEveryReplica SIGKILLs every cluster DNS container at once.
func (s *Disruptions) killEveryReplica() disruption {
	return disruption{name: "every cluster DNS pod SIGKILLed at once", target: everyReplicaTarget, act: func(ctx context.Context) (outcome, error) {
		pods, err := s.DNSPods(ctx)
		if err != nil {
			return outcome{}, err
		}
		k, err := s.Cluster.KillAndWait(ctx, pods, "")
		return outcome{back: k.First, note: fmt.Sprintf("%d pods; the first back Ready after %.1f s, the last after %.1f s",
			len(pods), k.First.Seconds(), k.Last.Seconds())}, err
	}}
}

// killNodeLocalPod SIGKILLs the node-local cache of a DaemonSet.
func (s *Disruptions) killNodeLocalPod(ds string) disruption {
	return disruption{name: "node-local pod SIGKILLed", act: func(ctx context.Context) (outcome, error) {
		pods, err := s.Cluster.RunningPods(ctx, scenario.DNSNamespace, ds)
		if err != nil {
			return outcome{}, err
		}
		if len(pods) != 1 {
			return outcome{}, fmt.Errorf("%d pods of %s running, want 1", len(pods), ds)
		}
		k, err := s.Cluster.KillAndWait(ctx, pods, "node-cache")
		return outcome{note: fmt.Sprintf("back Ready after %.1f s", k.Last.Seconds())}, err
	}}
}

// rollNodeLocal changes an annotation of a node-local DaemonSet's pod
// template, as an update does, and waits until the new pod is Ready and
// the old one gone.
func (s *Disruptions) rollNodeLocal(ds, name string, target func(loadlog.Counts, outcome) (string, bool)) disruption {
	return disruption{name: name, target: target, act: func(ctx context.Context) (outcome, error) {
		return s.roll(ctx, ds, "")
	}}
}

// rollNodeLocalUnavailable is rollNodeLocal with maxUnavailable 1 and
// no surge, as deploy/components/node-local updated before issue 32
// (and stock's does), its strategy restored afterwards.
func (s *Disruptions) rollNodeLocalUnavailable(ds string) disruption {
	return disruption{name: "node-local rolling update (maxUnavailable, before)", act: func(ctx context.Context) (outcome, error) {
		o, err := s.roll(ctx, ds, `"updateStrategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1}},`)
		if err != nil {
			return o, err
		}
		restore := []byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":"10%"}}}}`)
		_, err = s.Cluster.Client().AppsV1().DaemonSets(scenario.DNSNamespace).Patch(ctx, ds, types.StrategicMergePatchType, restore, metav1.PatchOptions{})
		return o, err
	}}
}

// roll patches the DaemonSet's template (and spec, the JSON members in
// spec) and times the update: when the new pod was Ready, when the old
// one was gone.
func (s *Disruptions) roll(ctx context.Context, ds, spec string) (outcome, error) {
	old, err := s.Cluster.RunningPods(ctx, scenario.DNSNamespace, ds)
	if err != nil {
		return outcome{}, err
	}
	patch := fmt.Sprintf(`{"spec":{%s"template":{"metadata":{"annotations":{"schemadns.test/rolled":"%d"}}}}}`, spec, time.Now().UnixNano())
	at := time.Now()
	if _, err := s.Cluster.Client().AppsV1().DaemonSets(scenario.DNSNamespace).Patch(ctx, ds, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return outcome{}, err
	}
	isOld := map[string]bool{}
	for _, p := range old {
		isOld[p.Name] = true
	}
	var newReady, oldGone time.Duration
	err = cluster.PollUntil(ctx, 3*time.Minute, 100*time.Millisecond, "DaemonSet "+ds+" rolled", func() error {
		pods, err := s.Cluster.PodsOf(ctx, scenario.DNSNamespace, map[string]string{"k8s-app": ds})
		if err != nil {
			return err
		}
		oldLeft, ready := 0, false
		for i := range pods {
			if isOld[pods[i].Name] {
				oldLeft++
			} else if cluster.PodReady(&pods[i]) && pods[i].DeletionTimestamp == nil {
				ready = true
			}
		}
		if ready && newReady == 0 {
			newReady = time.Since(at)
		}
		if oldLeft == 0 && oldGone == 0 {
			oldGone = time.Since(at)
		}
		if newReady == 0 || oldGone == 0 {
			return fmt.Errorf("%d old pods left, new one ready %v", oldLeft, ready)
		}
		return nil
	})
	return outcome{note: fmt.Sprintf("new pod Ready after %.1f s, old pod gone after %.1f s", newReady.Seconds(), oldGone.Seconds())}, err
}

// drainNode is a node drain on a one-node cluster: cordon the node,
// evict the cluster DNS pods as kubectl drain does (the PDB, one pod at a
// time, refuses the second while the first's replacement cannot be
// scheduled), then uncordon it, as a second node would have taken the
// replacement, and evict the rest once the PDB allows.
func (s *Disruptions) drainNode() disruption {
	return disruption{name: "node drained (cluster DNS pods evicted, PDB in force)", target: noFail, act: func(ctx context.Context) (outcome, error) {
		pods, err := s.DNSPods(ctx)
		if err != nil {
			return outcome{}, err
		}
		if len(pods) < 2 {
			return outcome{}, fmt.Errorf("%d DNS pods, want 2", len(pods))
		}
		at := time.Now()
		since := func() float64 { return time.Since(at).Seconds() }
		if err := s.Cluster.Cordon(ctx, true); err != nil {
			return outcome{}, err
		}
		uncordoned := false
		defer func() {
			if !uncordoned {
				_ = s.Cluster.Cordon(context.WithoutCancel(ctx), false)
			}
		}()
		if err := s.Cluster.Evict(ctx, scenario.DNSNamespace, pods[0].Name); err != nil {
			return outcome{}, fmt.Errorf("first eviction: %w", err)
		}
		note := fmt.Sprintf("cordoned, 1st pod evicted at +%.1f; ", since())
		if err := s.Cluster.Evict(ctx, scenario.DNSNamespace, pods[1].Name); err == nil {
			note += "the PDB let the 2nd eviction through; "
		} else if apierrors.IsTooManyRequests(err) {
			note += "the PDB refused the 2nd; "
		} else {
			return outcome{}, fmt.Errorf("second eviction: %w", err)
		}
		if err := scenario.Sleep(ctx, 5*time.Second); err != nil {
			return outcome{}, err
		}
		if err := s.Cluster.Cordon(ctx, false); err != nil {
			return outcome{}, err
		}
		uncordoned = true
		note += fmt.Sprintf("uncordoned at +%.1f; ", since())
		for _, p := range pods[1:] {
			err := cluster.PollUntil(ctx, 2*time.Minute, time.Second, "evict "+p.Name, func() error {
				err := s.Cluster.Evict(ctx, scenario.DNSNamespace, p.Name)
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			})
			if err != nil {
				return outcome{}, err
			}
		}
		note += fmt.Sprintf("2nd evicted at +%.1f; ", since())
		if err := s.Cluster.WaitRollout(ctx, scenario.DNSNamespace, scenario.DNSDeploy, 3*time.Minute); err != nil {
			return outcome{}, err
		}
		err = s.Cluster.WaitPodsGone(ctx, scenario.DNSNamespace, []string{pods[0].Name, pods[1].Name})
		return outcome{note: note + fmt.Sprintf("both replaced and gone at +%.1f", since())}, err
	}}
}
