package kubeschema

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
)

// TestApplyMatchesFullBuild makes batches of random changes (endpoints
// come and go, services are deleted and created again) and checks after
// each that the snapshot the builder published is the one a full build
// makes, and that the snapshot published before it did not change: the
// copy-on-write of namespaces and PTR shards copies what it changes.
func TestApplyMatchesFullBuild(t *testing.T) {
	const n = 300
	src := scaleFixture(t, n)
	k := scalePlugin(src)
	b := newBuilder(k, src)
	k.Publish(b.fullBuild())
	rnd := rand.New(rand.NewPCG(1, 2))
	for batch := range 40 {
		before := k.Snapshot()
		frozen := dump(k, before)
		for range 1 + rnd.IntN(8) {
			i := rnd.IntN(n)
			ns, name := src.set(t, i, rnd.IntN(12))
			if rnd.IntN(4) == 0 {
				delete(src.services, ns+"/"+name)
			}
			b.Mark(kubesource.Event{Resource: kubesource.Services, Namespace: ns, Service: name, Changed: time.Now()})
		}
		b.Apply()
		if got := dump(k, before); got != frozen {
			t.Fatalf("batch %d changed the snapshot published before it", batch)
		}
		if got, want := dump(k, k.Snapshot()), dump(k, newBuilder(k, src).fullBuild()); got != want {
			t.Fatalf("batch %d: snapshot differs from a full build:\n%s", batch, firstDiff(got, want))
		}
	}
}

// dump writes every record of s, in a stable order: each service's
// records in every forward zone, and the PTR index.
func dump(k *Kubeschema, s *dnszone.Snapshot) string {
	var lines []string
	for _, zone := range k.Zones {
		if dnsname.IsReverseZone(zone) {
			continue
		}
		for _, svc := range s.Services() {
			for _, rr := range k.Records(svc, zone) {
				lines = append(lines, zone+" "+rr.String())
			}
		}
	}
	s.PTRs(k.Zones[0], func(addr netip.Addr, target string) {
		lines = append(lines, fmt.Sprintf("PTR %s %s", addr, target))
	})
	lines = append(lines, fmt.Sprintf("services %d", s.Len()))
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i, g[i], w[i])
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(g), len(w))
}

// TestPrepareMatchesFullBuild feeds a builder the events of a cache that
// is listing (every object once, in random order, with changes between)
// and checks that the snapshot it publishes once synced, built by Prepare
// as the events came, is the one a full build makes.
func TestPrepareMatchesFullBuild(t *testing.T) {
	const n = 300
	src := scaleFixture(t, n)
	k := scalePlugin(src)
	b := newBuilder(k, src)
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, i := range rnd.Perm(n) {
		ns, name := src.set(t, i, rnd.IntN(12))
		b.Mark(kubesource.Event{Resource: kubesource.Services, Namespace: ns, Service: name, Changed: time.Now()})
		if rnd.IntN(20) == 0 {
			b.Prepare()
		}
		if rnd.IntN(10) == 0 { // a change to an object listed before
			j := rnd.IntN(n)
			ns, name := src.set(t, j, rnd.IntN(12))
			b.Mark(kubesource.Event{Resource: kubesource.EndpointSlices, Namespace: ns, Service: name, Changed: time.Now()})
		}
	}
	b.Publish()
	if got, want := dump(k, k.Snapshot()), dump(k, newBuilder(k, src).fullBuild()); got != want {
		t.Fatalf("the prepared snapshot differs from a full build:\n%s", firstDiff(got, want))
	}
}
