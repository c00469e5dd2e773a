// Package hold keeps a query whose upstream could not be reached and sends
// it down the chain again, with a growing, jittered pause between tries,
// until a try gets a reply or a short window (3 s by default) has passed.
// It rides out the moment when every replica of the cluster DNS is down at
// once and kube-proxy rejects the Service address: forward and
// gensearchpath fail such a query within a millisecond, and a replica back
// a second later would have answered it.
//
// Holding is bounded three ways: the queries held at once in the process
// (a count and their bytes: beyond it a query fails at once, as without
// hold), the retries (a token bucket earned by new queries, so that a
// returning upstream is not met by every held query at once), and a query
// that a replica may have read before its connection broke (sent again
// once at most).
package hold

import (
	"context"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/miekg/dns"
)

// The pause between tries starts short, since a replica may be back at
// once, and grows up to a bound that keeps a held query from waiting long
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
	first  time.Duration // the shortest pause between tries
	most   time.Duration // the longest pause

	held    *budget      // shared by every hold of the process
	retries *retryBudget // this stanza's own

	// sleeper waits out a pause: sleep, unless a test needs a late timer.
	sleeper func(ctx context.Context, d time.Duration) bool
}

// Name implements plugin.Handler.
func (h *Hold) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. The plugins after hold (gensearchpath,
// forward, grpc) leave the request as they found it, so each try sends the
// same query.
func (h *Hold) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	start := time.Now()
	h.retries.deposit()
	tw := &trackWriter{ResponseWriter: w}
	rcode, err := plugin.NextOrFailure(h.Name(), h.Next, ctx, tw, r)
	if tw.wrote || rcode != dns.RcodeServerFailure {
		return rcode, err
	}
	f := classify(err)
	if f == other {
		return rcode, err
	}
	n := cost(r)
	if reason := h.held.take(n); reason != "" {
		rejected.WithLabelValues(metrics.WithServer(ctx), reason).Inc()
		return rcode, err
	}
	defer h.held.give(n)
	server := metrics.WithServer(ctx)
	heldNow.WithLabelValues(server).Inc()
	defer heldNow.WithLabelValues(server).Dec()
	q := &heldQuery{Hold: h, ctx: ctx, w: w, r: r, server: server, end: h.deadline(ctx, start),
		pauses: backoff{first: h.first, most: h.most}, rcode: rcode, err: err, failed: f}
	wrote := q.retry()
	observe(server, start, outcomeOf(wrote))
	return q.rcode, q.err
}

// deadline is when a query that came at start stops being held: the window,
// or the client's own patience where CoreDNS knows it (the cancel plugin's
// deadline, a DoH request's context).
func (h *Hold) deadline(ctx context.Context, start time.Time) time.Time {
	end := start.Add(h.window)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	return end
}

// heldQuery is one query while it is held, and its last try's result.
type heldQuery struct {
	*Hold
	ctx    context.Context
	w      dns.ResponseWriter
	r      *dns.Msg
	server string
	end    time.Time
	pauses backoff

	rcode  int
	err    error
	failed failure // what the last try's error says
	resent bool    // sent again after a try that may have reached a replica
}

// retry sends the query down the chain again after each pause until a try
// is not one to repeat, or the time is up; it reports whether a reply was
// written. A pause whose retry the bucket has no token for passes without
// a try: the query waits on for a later one. The try as the window ends is
// always made (the bucket lends its token): without it, with many queries
// held, the oldest could spend the whole window throttled and fail although
// a replica came back before its end.
func (q *heldQuery) retry() bool {
	for {
		if q.failed == lost && q.resent {
			rejected.WithLabelValues(q.server, reasonResent).Inc()
			return false
		}
		left := time.Until(q.end)
		pause := q.pauses.next()
		last := pause >= left // this try comes as the window ends
		wait := min(pause, left)
		if wait <= 0 || !q.sleep(wait) {
			return false
		}
		// On a busy node a pause can end past the window's end: the try it
		// leads to is then the last one and is lent its token like any.
		last = last || !time.Now().Before(q.end)
		if !q.retries.spend(last) {
			throttled.WithLabelValues(q.server).Inc()
			continue
		}
		retries.WithLabelValues(q.server).Inc()
		if q.failed == lost {
			q.resent = true
		}
		tw := &trackWriter{ResponseWriter: q.w}
		q.rcode, q.err = plugin.NextOrFailure(q.Name(), q.Next, q.ctx, tw, q.r)
		if tw.wrote || q.rcode != dns.RcodeServerFailure {
			return tw.wrote
		}
		if q.failed = classify(q.err); q.failed == other {
			return false
		}
	}
}

func (q *heldQuery) sleep(d time.Duration) bool {
	if q.sleeper != nil {
		return q.sleeper(q.ctx, d)
	}
	return sleep(q.ctx, d)
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
