package main

import (
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/server"

	"context"
	"fmt"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// latencyNamespace holds the objects the programming-latency runs change.
const latencyNamespace = "bench-latency"

// latencyServices are the headless services whose endpoints are added and
// made unready, in turn.
const latencyServices = 10

// changer makes the changes: it keeps the latest version of each slice it
// updates, and the addresses it added.
type changer struct {
	f      *fixture
	slices []*discoveryv1.EndpointSlice
	added  []string // per service: the endpoint added last, made unready next
	next   int      // latency addresses used
	n      int      // services created
}

// setupLatency creates the headless services the changes work on.
func (f *fixture) setupLatency(ctx context.Context) (*changer, error) {
	ch := &changer{f: f, slices: make([]*discoveryv1.EndpointSlice, latencyServices), added: make([]string, latencyServices)}
	if err := f.createNamespace(ctx, latencyNamespace); err != nil {
		return nil, err
	}
	for j := range latencyServices {
		name := fmt.Sprintf("lat-hl-%d", j)
		if _, err := f.createService(ctx, latencyNamespace, name, true); err != nil {
			return nil, err
		}
		sl := endpointSlice(latencyNamespace, name+"-0", []string{ch.addr()}, nil)
		sl.Labels = map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy}
		got, err := f.cs.DiscoveryV1().EndpointSlices(latencyNamespace).Create(ctx, sl, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		ch.slices[j] = got
	}
	return ch, nil
}

func (ch *changer) addr() string {
	a := nth(latencyBase, ch.next)
	ch.next++
	return a
}

// sentinels are the latency services, for the sync wait.
func (ch *changer) sentinels() []server.Sentinel {
	var out []server.Sentinel
	for j := range latencyServices {
		out = append(out, server.Sentinel{Name: fmt.Sprintf("lat-hl-%d.%s.svc.cluster.local.", j, latencyNamespace), Qtype: dns.TypeA, Min: 1})
	}
	return out
}

// MakeChange performs change i through the API: a new service, an
// endpoint added, or the endpoint added last made unready, in turn.
func (ch *changer) MakeChange(ctx context.Context, i int) (perf.Change, error) {
	j := (i / 3) % latencyServices
	svc := fmt.Sprintf("lat-hl-%d.%s.svc.cluster.local.", j, latencyNamespace)
	switch i % 3 {
	case 0:
		ch.n++
		name := fmt.Sprintf("lat-%d", ch.n)
		ip, err := ch.f.createService(ctx, latencyNamespace, name, false)
		if err != nil {
			return perf.Change{}, err
		}
		return perf.Change{Kind: "new service", QName: name + "." + latencyNamespace + ".svc.cluster.local.", Shows: func(m *dns.Msg) bool { return perf.HasA(m, ip) }}, nil
	case 1:
		a := ch.addr()
		ready := true
		if err := ch.updateSlice(ctx, j, func(sl *discoveryv1.EndpointSlice) {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}); err != nil {
			return perf.Change{}, err
		}
		ch.added[j] = a
		return perf.Change{Kind: "endpoint added", QName: svc, Shows: func(m *dns.Msg) bool { return perf.HasA(m, a) }}, nil
	}
	a := ch.added[j]
	unready := false
	if err := ch.updateSlice(ctx, j, func(sl *discoveryv1.EndpointSlice) {
		for k := range sl.Endpoints {
			if sl.Endpoints[k].Addresses[0] == a {
				sl.Endpoints[k].Conditions.Ready = &unready
			}
		}
	}); err != nil {
		return perf.Change{}, err
	}
	return perf.Change{Kind: "endpoint made unready", QName: svc, Shows: func(m *dns.Msg) bool { return m.Rcode == dns.RcodeSuccess && !perf.HasA(m, a) }}, nil
}

func (ch *changer) updateSlice(ctx context.Context, j int, edit func(*discoveryv1.EndpointSlice)) error {
	sl := ch.slices[j].DeepCopy()
	edit(sl)
	got, err := ch.f.cs.DiscoveryV1().EndpointSlices(latencyNamespace).Update(ctx, sl, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	ch.slices[j] = got
	return nil
}
