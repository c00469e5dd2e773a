// Package clusterfirst keeps the cluster's own names answered when the
// server is overloaded: it watches how long goroutines wait to run and how
// full the listeners' receive queues are, and once the wait has stood over
// a target for 100 ms (or a listener overflowed) while the process used
// the CPU it may use (a queue that stands only because a neighbour, a CPU
// limit, a stop or the collector holds the process up is never shed for:
// stock would answer those queries a little late), it drops UDP queries
// for names outside the cluster zones, which the chain would send to a
// slower upstream, with a probability that grows while the queue stands;
// once every other name is dropped, it drops cluster names too, at random,
// as much as keeps the listeners' queues short but never empty, and both
// in the kernel (a socket filter on the listeners that reads the
// question's name, socket.go and bpf.go), before the server spends any
// work on them; while the filter is on, the listeners' receive buffers
// are bounded too, so that the queue in them stays short.
package clusterfirst

import (
	"context"
	"math/rand/v2"
	"net"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/miekg/dns"
	ot "github.com/opentracing/opentracing-go"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// Clusterfirst is the plugin handler.
type Clusterfirst struct {
	Next plugin.Handler
	// Zones are the cluster zones, lower case: from the stanza, or else
	// those the block's schema plugins serve, found at startup (before
	// the server takes queries).
	Zones []string

	// signal says how hard to shed: the sampler, or fixed odds in tests.
	signal overload
	// sampler measures the queue delay; started and stopped with the server.
	sampler *sampler
}

// overload is where the handler reads the drop probabilities from.
type overload interface {
	Shedding() shedding
	// overloaded: an episode is under way (its drops may all be the
	// kernel's, with Shedding 0).
	overloaded() bool
	// dropped counts a drop of a query in the cluster zones or not.
	dropped(cluster bool)
}

// Name implements plugin.Handler.
func (cf *Clusterfirst) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. Unloaded, it costs an atomic load.
func (cf *Clusterfirst) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	sh := cf.signal.Shedding()
	// TCP is never shed: its client waits on a connection rather than
	// retrying after a timeout, and a TCP query has already cost a
	// handshake, so dropping it would save little and stall much.
	if sh == 0 || !isUDP(w) {
		return cf.pass(ctx, w, r)
	}
	cluster := cf.inCluster(r)
	odds := sh.other()
	if cluster {
		odds = sh.cluster()
	}
	if odds == 0 || rand.Uint32() >= odds {
		return cf.pass(ctx, w, r)
	}
	droppedTotal.WithLabelValues(metrics.WithServer(ctx), class(cluster)).Inc()
	cf.signal.dropped(cluster)
	// A silent drop, as stock's shed makes them: nothing written, and an
	// rcode plugin.ClientWrite takes for written, so that dnsserver
	// writes no SERVFAIL either. The client times out and retries.
	return dns.RcodeSuccess, nil
}

// pass passes a query on that is not shed. While overloaded, it first
// grows the goroutine's stack to what the rest of the chain needs, in one
// copy here where the stack is still shallow: each query runs in a
// goroutine of its own, whose first stack the runtime sizes by the
// average stack it scanned at the last collection, and with the other
// names shed no goroutine waits deep in the chain on the upstream to keep
// that average up; the stack then doubled two or three times in the answer
// path, each copy adjusting every frame of the deep chain
// (runtime.newstack and copystack took 15-19% of the server's CPU at 4x
// its saturation rate with a silent upstream, perf record -g).
func (cf *Clusterfirst) pass(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if cf.signal.overloaded() {
		growStack()
	}
	return cf.next(ctx, w, r)
}

// chainStack is the frame growStack takes: with the few KiB the goroutine
// has used by then, the runtime grows the stack to 16 KiB at once, enough
// for the deepest answer path (the cache's write of a forwarded answer).
const chainStack = 12 << 10

// growStack's frame is the room the chain needs; the runtime grows the
// stack to fit it before the function runs.
//
//go:noinline
func growStack() {
	var room [chainStack]byte
	touch(room[:])
}

// touch keeps growStack's frame from being optimised away.
//
//go:noinline
func touch([]byte) {}

// next passes the query on. plugin.NextOrFailure would allocate a writer
// that tells a metrics.Recorder further out which plugin answered (this
// early in the chain there is none: prometheus comes after), and a span
// when tracing; when neither applies the call is direct, so that the
// unloaded path allocates nothing.
func (cf *Clusterfirst) next(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if _, tracked := w.(plugin.PluginTracker); tracked || cf.Next == nil || ot.SpanFromContext(ctx) != nil {
		return plugin.NextOrFailure(pluginName, cf.Next, ctx, w, r)
	}
	return cf.Next.ServeDNS(ctx, w, r)
}

// inCluster tells whether the question is in a cluster zone, without
// allocating (plugin.Zones.Matches splits names into label slices).
func (cf *Clusterfirst) inCluster(r *dns.Msg) bool {
	if len(r.Question) != 1 {
		return false
	}
	name := r.Question[0].Name
	for _, z := range cf.Zones {
		if _, ok := dnsname.TrimZone(name, z); ok || z == "." {
			return true
		}
	}
	return false
}

// isUDP: the query came over UDP. Setup allows plain DNS blocks only,
// so a UDP address is not DNS over QUIC.
func isUDP(w dns.ResponseWriter) bool {
	_, udp := w.RemoteAddr().(*net.UDPAddr)
	return udp
}

// class is the class label of a drop.
func class(cluster bool) string {
	if cluster {
		return classCluster
	}
	return classOther
}
