// Package hold keeps a query whose upstream could not be reached and sends
// it down the chain again, with a growing pause between tries, until a try
// gets a reply or a short window (2 s by default) has passed. It rides out
// the moment when every replica of the cluster DNS is down at once and
// kube-proxy rejects the Service address: forward and gensearchpath fail
// such a query within a millisecond, and a replica back a second later
// would have answered it.
package hold

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/forward"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/proxy"
	"github.com/miekg/dns"
)

// The pause between tries starts short, since a replica may be back at
// once, and doubles up to a bound that keeps a held query from waiting long
// after the upstream is back; every try costs the node a refused packet or
// two and nothing more.
const (
	firstPause = 25 * time.Millisecond
	maxPause   = 250 * time.Millisecond
)

// Hold is the plugin: configuration is fixed at setup.
type Hold struct {
	Next plugin.Handler

	window time.Duration // how long a query is held at most
	first  time.Duration // the first pause between tries, doubled after each
	most   time.Duration // the longest pause
}

// Name implements plugin.Handler.
func (h *Hold) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. The plugins after hold (gensearchpath,
// forward, grpc) leave the request as they found it, so each try sends the
// same query.
func (h *Hold) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	start := time.Now()
	end := start.Add(h.window)
	// The client's own patience, where CoreDNS knows it (the cancel
	// plugin's deadline, a DoH request's context).
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	pause, tries := h.first, 0
	for {
		tw := &trackWriter{ResponseWriter: w}
		rcode, err := plugin.NextOrFailure(h.Name(), h.Next, ctx, tw, r)
		tries++
		if tw.wrote || rcode != dns.RcodeServerFailure || !unreachable(err) {
			if tries > 1 {
				observe(ctx, start, outcomeOf(tw.wrote))
			}
			return rcode, err
		}
		wait := min(pause, time.Until(end))
		if wait <= 0 || !sleep(ctx, wait) {
			if tries > 1 {
				observe(ctx, start, outcomeFailed)
			}
			return rcode, err
		}
		retries.WithLabelValues(metrics.WithServer(ctx)).Inc()
		pause = min(2*pause, h.most)
	}
}

// unreachable reports whether err says that the query got no reply because
// the upstream could not be reached: refused (nothing listens there, or
// kube-proxy rejects a Service without ready endpoints), reset or closed
// before the reply, no route to it, or every upstream marked down. The
// query is then safe to send again: no upstream answered it. A timeout is
// not retried: it has spent the window already, and an upstream too busy to
// answer gets no more queries from us.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	for _, target := range noReply {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// noReply are the errors of a query no upstream answered, as forward and
// gensearchpath return them (wrapped in net.OpError and os.SyscallError).
// A cached connection the upstream closed (a replica that exited: the
// kernel closes its sockets) is one: the query was not sent, or not
// answered.
var noReply = []error{
	syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	syscall.EHOSTUNREACH, syscall.ENETUNREACH,
	io.EOF, io.ErrUnexpectedEOF,
	forward.ErrNoHealthy, proxy.ErrNoHealthy,
	forward.ErrCachedClosed, proxy.ErrCachedClosed,
}

// sleep waits d, or less when ctx ends first; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// trackWriter notes whether a plugin down the chain wrote a reply: a try
// that wrote one is never repeated.
type trackWriter struct {
	dns.ResponseWriter
	wrote bool
}

// WriteMsg implements dns.ResponseWriter.
func (w *trackWriter) WriteMsg(m *dns.Msg) error {
	w.wrote = true
	return w.ResponseWriter.WriteMsg(m)
}

// Write implements dns.ResponseWriter.
func (w *trackWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}
