package hold

import (
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
)

const pluginName = "hold"

func init() { plugin.Register(pluginName, setup) }

const (
	defaultWindow = 2 * time.Second
	// maxWindow is the default timeout of glibc's and musl's resolvers: a
	// stub resolver has given up on the query by then, so a longer hold
	// would answer nobody.
	maxWindow = 5 * time.Second
)

func setup(c *caddy.Controller) error {
	h, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		h.Next = next
		return h
	})
	return nil
}

// parse reads one hold stanza: hold [WINDOW].
func parse(c *caddy.Controller) (*Hold, error) {
	h := &Hold{window: defaultWindow, first: firstPause, most: maxPause}
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, plugin.ErrOnce
		}
		args := c.RemainingArgs()
		switch len(args) {
		case 0:
		case 1:
			d, err := time.ParseDuration(args[0])
			if err != nil {
				return nil, c.Errf("window: %v", err)
			}
			if d <= 0 || d > maxWindow {
				return nil, c.Errf("window %s: want more than 0 and at most %s", d, maxWindow)
			}
			h.window = d
		default:
			return nil, c.ArgErr()
		}
		if c.NextBlock() {
			return nil, c.Errf("unknown property %q", c.Val())
		}
	}
	return h, nil
}
