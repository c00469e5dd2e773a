package kubeschema

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
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
	k.snap.Store(b.fullBuild())
	rnd := rand.New(rand.NewPCG(1, 2))
	for batch := range 40 {
		before := k.snap.Load()
		frozen := dump(before)
		for range 1 + rnd.IntN(8) {
			i := rnd.IntN(n)
			ns, name := src.set(t, i, rnd.IntN(12))
			if rnd.IntN(4) == 0 {
				delete(src.services, ns+"/"+name)
			}
			b.Mark(watchcache.Event{Kind: watchcache.Services, Namespace: ns, Name: name, Changed: time.Now()})
		}
		b.Apply()
		if got := dump(before); got != frozen {
			t.Fatalf("batch %d changed the snapshot published before it", batch)
		}
		if got, want := dump(k.snap.Load()), dump(newBuilder(k, src).fullBuild()); got != want {
			t.Fatalf("batch %d: snapshot differs from a full build:\n%s", batch, firstDiff(got, want))
		}
	}
}

// dump writes every record of s, in a stable order.
func dump(s *snapshot) string {
	var lines []string
	for _, z := range s.zones {
		for ns, m := range z.services {
			if len(m) == 0 {
				lines = append(lines, "empty namespace map "+ns)
			}
		}
		for _, r := range sortedServices(z) {
			for _, rr := range serviceRRs(r) {
				lines = append(lines, z.origin+" "+rr.String())
			}
		}
	}
	for i, shard := range s.ptr {
		for ip, recs := range shard {
			if ptrShard(ip) != i {
				lines = append(lines, fmt.Sprintf("%s in shard %d", ip, i))
			}
			for _, p := range recs {
				lines = append(lines, p.service+" "+p.rr.String())
			}
		}
	}
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
