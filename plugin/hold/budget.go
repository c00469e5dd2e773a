package hold

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// heldOverhead is what one held query is counted to cost besides its
// message: the goroutine of CoreDNS's server that serves it, its stack
// grown through the chain (forward's dial and read), a timer and the try's
// state. Measured: 5,000 queries held by the binary cost 10.7 KiB each
// (33 MiB of stacks and 19 MiB of heap); see the README.
const heldOverhead = 11 << 10

// Budget rejection reasons, the "reason" label of rejected_total.
const (
	reasonCount  = "count"  // max_held queries are held already
	reasonBytes  = "bytes"  // max_held's bytes are held already
	reasonResent = "resent" // lost after it was written, and sent again once already
)

// limits are the bounds of held queries, one set per CoreDNS process.
type limits struct {
	count int64 // queries held at once
	bytes int64 // their cost at once, heldOverhead plus the message each
}

// budget counts the queries held now against the limits. All hold
// stanzas of one Corefile share one budget (setup keeps it in the caddy
// instance's storage, which a reload replaces), since they share the
// process's memory limit.
type budget struct {
	limits
	mu    sync.Mutex
	count int64
	bytes int64
}

// cost is what holding r is counted for.
func cost(r *dns.Msg) int64 { return heldOverhead + int64(r.Len()) }

// take reserves n bytes for one more held query, or says why it cannot:
// the reason label, "" when it is taken.
func (b *budget) take(n int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.count >= b.limits.count:
		return reasonCount
	case b.bytes+n > b.limits.bytes:
		return reasonBytes
	}
	b.count++
	b.bytes += n
	return ""
}

// give returns what take reserved.
func (b *budget) give(n int64) {
	b.mu.Lock()
	b.count--
	b.bytes -= n
	b.mu.Unlock()
}

// tokenScale makes a token an integer count, so that the bucket is one
// atomic word: a query's first try earns ratio*tokenScale.
const tokenScale = 1000

// retryBudget is a token bucket of retries, as gRPC's retry throttling and
// Envoy's retry budgets are: every query that comes to hold earns ratio of
// a retry, up to burst saved, and every retry spends one. The retries that
// reach an upstream are then at most ratio times the new queries (plus the
// burst), outage or not, so an upstream that comes back meets at most
// 1+ratio times its usual load instead of every held query at once. A
// floor of perSecond retries a second, earned with time, keeps a quiet
// node's few held queries tried (as Envoy's min_retry_concurrency does).
// One per hold stanza: each block has its own upstream.
type retryBudget struct {
	tokens atomic.Int64 // in 1/tokenScale of a retry
	earn   int64        // per query
	most   int64        // the burst

	perSecond int64      // tokens earned a second, whatever the queries
	mu        sync.Mutex // guards refilled
	refilled  time.Time  // when the floor's tokens were last added
}

func newRetryBudget(ratio float64, burst int, perSecond float64) *retryBudget {
	b := &retryBudget{earn: int64(ratio * tokenScale), most: int64(burst) * tokenScale,
		perSecond: int64(perSecond * tokenScale), refilled: time.Now()}
	b.tokens.Store(b.most) // an idle node may retry a burst at once
	return b
}

// deposit adds one query's share; in normal times the bucket is full and
// this is a load.
func (b *retryBudget) deposit() { b.add(b.earn) }

func (b *retryBudget) add(n int64) {
	for {
		t := b.tokens.Load()
		if t >= b.most {
			return
		}
		if b.tokens.CompareAndSwap(t, min(t+n, b.most)) {
			return
		}
	}
}

// spend takes one retry, and reports whether there was one. A held
// query's last try (last) always gets one: the bucket lends it, down to a
// debt of the burst, which the tokens earned later pay back before any
// other retry is made. So each query is tried at its window's end, and the
// retries over time stay within the budget plus one burst; when an
// upstream comes back, these last tries come at the rate their queries
// came, no faster.
func (b *retryBudget) spend(last bool) bool {
	b.refill()
	for {
		t := b.tokens.Load()
		if t < tokenScale && !last {
			return false
		}
		if b.tokens.CompareAndSwap(t, max(t-tokenScale, -b.most)) {
			return true
		}
	}
}

// refill adds the floor's tokens for the time since the last refill. Only
// held queries call it, so the lock is off the path of ordinary queries.
func (b *retryBudget) refill() {
	if b.perSecond <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	n := int64(now.Sub(b.refilled)) * b.perSecond / int64(time.Second)
	if n <= 0 {
		return
	}
	b.refilled = now
	b.add(n)
}

// backoff draws the pauses of one held query with decorrelated jitter
// (each pause uniform between first and three times the one before, at
// most most): queries that failed together do not come back together, and
// the pauses still grow when the outage lasts.
type backoff struct {
	first, most, last time.Duration
}

func (b *backoff) next() time.Duration {
	if b.last == 0 {
		// The first pause is jittered too: queries that failed at the
		// same moment (the upstream died) are spread from their first try.
		b.last = b.first
	}
	lo, hi := b.first, 3*b.last
	d := lo
	if hi > lo {
		d += rand.N(hi - lo)
	}
	b.last = min(d, b.most)
	return b.last
}
