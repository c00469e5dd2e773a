package clusterfirst

import (
	"context"
	"runtime/metrics"
	"testing"
	"unsafe"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// episodeOnly is an episode whose drops are all the kernel's: the handler
// drops nothing.
type episodeOnly struct{}

func (episodeOnly) Shedding() shedding { return 0 }
func (episodeOnly) overloaded() bool   { return true }
func (episodeOnly) dropped(bool)       {}

// deepChain stands for the plugins after clusterfirst: it notes where its
// first frame is, uses about 10 KiB of stack below it, as the answer path
// of a forwarded name does, and reports whether the stack was copied
// meanwhile (a copy moves every frame).
type deepChain struct{ moved chan bool }

func (d deepChain) Name() string { return "deep" }

func (d deepChain) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	var mark byte
	before := uintptr(unsafe.Pointer(&mark))
	useStack(20)
	d.moved <- uintptr(unsafe.Pointer(&mark)) != before
	return dns.RcodeSuccess, w.WriteMsg(new(dns.Msg).SetReply(r))
}

// useStack takes depth frames of about 512 bytes each.
//
//go:noinline
func useStack(depth int) byte {
	var frame [512]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return useStack(depth-1) + frame[depth%len(frame)]
}

// stackCopied serves one UDP query in a goroutine of its own, as
// miekg/dns does, and tells whether the chain after clusterfirst copied
// the goroutine's stack.
func stackCopied(t *testing.T, signal overload) bool {
	t.Helper()
	chain := deepChain{moved: make(chan bool, 1)}
	cf := &Clusterfirst{Next: chain, Zones: []string{"cluster.local."}, signal: signal}
	r := new(dns.Msg).SetQuestion("web.demo.svc.cluster.local.", dns.TypeA)
	go func() {
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := cf.ServeDNS(context.Background(), w, r); err != nil {
			t.Error(err)
		}
	}()
	return <-chain.moved
}

// While overloaded, a query's goroutine has the room the chain needs
// before the chain runs, so that the deep frames are never copied; outside
// an episode nothing changes (the goroutine grows as it goes).
func TestGrowStackBeforeTheChainWhileOverloaded(t *testing.T) {
	start := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	metrics.Read(start)
	// The runtime sizes a new goroutine's stack by the stacks it last
	// scanned; from 16 KiB on, the chain below would copy nothing either
	// way, and the test could not tell.
	if size := start[0].Value.Uint64(); size >= 16<<10 {
		t.Fatalf("goroutines start with %d bytes of stack: this test needs a start under 16 KiB to see a copy", size)
	}
	if !stackCopied(t, fixedOdds(shedNothing)) {
		t.Error("unloaded: the chain's 10 KiB did not copy a fresh goroutine's stack; the test cannot tell growth from none")
	}
	if stackCopied(t, episodeOnly{}) {
		t.Error("overloaded: the chain copied the stack that clusterfirst should have grown first")
	}
}

// BenchmarkFreshGoroutineDeepChain is a query's whole goroutine, as
// miekg/dns makes one per UDP query, through clusterfirst and a chain that
// uses about 10 KiB of stack: unloaded the stack doubles as the chain
// deepens, each copy adjusting every frame; overloaded clusterfirst grows
// it once, where it is shallow.
func BenchmarkFreshGoroutineDeepChain(b *testing.B) {
	for _, bc := range []struct {
		name   string
		signal overload
	}{{"unloaded", fixedOdds(shedNothing)}, {"overloaded", episodeOnly{}}} {
		b.Run(bc.name, func(b *testing.B) {
			chain := deepChain{moved: make(chan bool, 1)}
			cf := &Clusterfirst{Next: chain, Zones: []string{"cluster.local."}, signal: bc.signal}
			r := new(dns.Msg).SetQuestion("web.demo.svc.cluster.local.", dns.TypeA)
			w := &test.ResponseWriter{}
			copies := 0
			for b.Loop() {
				go cf.ServeDNS(context.Background(), w, r)
				if <-chain.moved {
					copies++
				}
			}
			b.ReportMetric(float64(copies)/float64(b.N), "copied/op")
		})
	}
}
