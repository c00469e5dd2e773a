package hold

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
)

const pluginName = "hold"

func init() { plugin.Register(pluginName, setup) }

const (
	// defaultWindow covers a replica back Ready within 2 s of an outage of
	// every replica, plus the time its endpoint takes to reach kube-proxy
	// (up to a second), for a query that came as the replicas died; a try
	// that starts at its end and meets a slow upstream (forward's 2 s read
	// timeout) still ends by glibc's and musl's 5 s.
	defaultWindow = 3 * time.Second
	// maxWindow is the default timeout of glibc's and musl's resolvers: a
	// stub resolver has given up on the query by then, so a longer hold
	// would answer nobody.
	maxWindow = 5 * time.Second

	// The default budget of held queries, for the process: at most 1,000
	// at once, counted at 11 KiB each plus the message, in at most 12 MiB.
	// With node-local's three caches full (70 MiB) it leaves room in its
	// 128 MiB limit for a burst's queries in their first try; see the
	// README.
	defaultMaxHeld      = 1000
	defaultMaxHeldBytes = 12 << 20

	// The default retry budget: a retry per new query, ten saved, and ten
	// a second whatever the queries. An upstream back from an outage gets
	// at most about twice its load, and a quiet node's few held queries
	// are still tried several times a second.
	defaultRetryRatio = 1.0
	defaultRetryBurst = 10
	defaultRetryFloor = 10.0
	maxRetryRatio     = 100
	maxRetryFloor     = 10000
)

func setup(c *caddy.Controller) error {
	h, lim, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	if h.held, err = sharedBudget(c, lim); err != nil {
		return plugin.Error(pluginName, err)
	}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		h.Next = next
		return h
	})
	return nil
}

// budgetKey names the process's budget in the caddy instance's storage:
// one per loaded Corefile, so that a reload starts a new one and the old
// goes with the old instance.
type budgetKey struct{}

// sharedBudget is the budget of every hold in the Corefile c is setting
// up, made by the first; the others must ask for the same limits.
func sharedBudget(c *caddy.Controller, lim limits) (*budget, error) {
	if b, ok := c.Get(budgetKey{}).(*budget); ok {
		if b.limits != lim {
			return nil, fmt.Errorf("max_held %d %d differs from another hold block's %d %d: the process has one budget, every hold must give the same",
				lim.count, lim.bytes, b.limits.count, b.limits.bytes)
		}
		return b, nil
	}
	b := &budget{limits: lim}
	c.Set(budgetKey{}, b)
	return b, nil
}

// parse reads one hold stanza:
//
//	hold [WINDOW] {
//	    max_held COUNT [SIZE]
//	    retry_budget RATIO [BURST [FLOOR]]
//	}
func parse(c *caddy.Controller) (*Hold, limits, error) {
	h := &Hold{window: defaultWindow, first: firstPause, most: maxPause}
	lim := limits{count: defaultMaxHeld, bytes: defaultMaxHeldBytes}
	rb := retrySettings{ratio: defaultRetryRatio, burst: defaultRetryBurst, floor: defaultRetryFloor}
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, lim, plugin.ErrOnce
		}
		if err := parseWindow(c, h); err != nil {
			return nil, lim, err
		}
		for c.NextBlock() {
			var err error
			switch c.Val() {
			case "max_held":
				lim, err = parseMaxHeld(c)
			case "retry_budget":
				rb, err = parseRetryBudget(c)
			default:
				return nil, lim, c.Errf("unknown property %q", c.Val())
			}
			if err != nil {
				return nil, lim, err
			}
		}
	}
	h.retries = newRetryBudget(rb.ratio, rb.burst, rb.floor)
	return h, lim, nil
}

func parseWindow(c *caddy.Controller, h *Hold) error {
	args := c.RemainingArgs()
	switch len(args) {
	case 0:
		return nil
	case 1:
	default:
		return c.ArgErr()
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		return c.Errf("window: %v", err)
	}
	if d <= 0 || d > maxWindow {
		return c.Errf("window %s: want more than 0 and at most %s", d, maxWindow)
	}
	h.window = d
	return nil
}

// parseMaxHeld reads max_held COUNT [SIZE]; without SIZE the bytes are
// COUNT times what a small query is counted.
func parseMaxHeld(c *caddy.Controller) (limits, error) {
	args := c.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return limits{}, c.ArgErr()
	}
	n, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || n < 0 {
		return limits{}, c.Errf("max_held %q: want a count of queries, 0 or more", args[0])
	}
	lim := limits{count: n, bytes: n * (heldOverhead + 512)}
	if len(args) == 2 {
		if lim.bytes, err = parseSize(args[1]); err != nil {
			return limits{}, c.Errf("max_held size %q: %v", args[1], err)
		}
	}
	return lim, nil
}

// parseSize reads bytes as Kubernetes writes memory: a count with an
// optional Ki, Mi or Gi (B after it allowed).
func parseSize(s string) (int64, error) {
	num, mult := strings.TrimSuffix(s, "B"), int64(1)
	for i, suffix := range []string{"Ki", "Mi", "Gi"} {
		if strings.HasSuffix(num, suffix) {
			num, mult = strings.TrimSuffix(num, suffix), int64(1)<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, errors.New("want bytes, a count with Ki, Mi or Gi or none")
	}
	return n * mult, nil
}

// retrySettings are retry_budget's arguments.
type retrySettings struct {
	ratio float64 // retries per query that comes
	burst int     // retries saved at most
	floor float64 // retries a second, whatever the queries
}

// parseRetryBudget reads retry_budget RATIO [BURST [FLOOR]].
func parseRetryBudget(c *caddy.Controller) (retrySettings, error) {
	rb := retrySettings{burst: defaultRetryBurst, floor: defaultRetryFloor}
	args := c.RemainingArgs()
	if len(args) < 1 || len(args) > 3 {
		return rb, c.ArgErr()
	}
	var err error
	if rb.ratio, err = strconv.ParseFloat(args[0], 64); err != nil || rb.ratio < 0 || rb.ratio > maxRetryRatio {
		return rb, c.Errf("retry_budget ratio %q: want retries per new query, from 0 to %d", args[0], maxRetryRatio)
	}
	if len(args) > 1 {
		if rb.burst, err = strconv.Atoi(args[1]); err != nil || rb.burst < 1 {
			return rb, c.Errf("retry_budget burst %q: want a count of retries, 1 or more", args[1])
		}
	}
	if len(args) > 2 {
		if rb.floor, err = strconv.ParseFloat(args[2], 64); err != nil || rb.floor < 0 || rb.floor > maxRetryFloor {
			return rb, c.Errf("retry_budget floor %q: want retries a second, from 0 to %d", args[2], maxRetryFloor)
		}
	}
	return rb, nil
}
