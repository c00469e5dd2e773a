package handover

import (
	"context"
	"fmt"
	"net"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/miekg/dns"
)

const pluginName = "handover"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

// config is the stanza, parsed.
type config struct {
	keyFile string
	// selfReady is nil without self_ready.
	selfReady *selfReady
}

func setup(c *caddy.Controller) error {
	conf, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	cfg := dnsserver.GetConfig(c)
	if cfg.Zone != "" && !dns.IsSubDomain(cfg.Zone, probeZone) {
		return plugin.Error(pluginName, c.Errf("must be in a server block whose zone holds %s (the root zone's): probes of its successor are asked there", probeZone))
	}
	key, err := loadKey(conf.keyFile)
	if err != nil {
		// Degrade to no handover at all: without the key nobody can be
		// told from a stranger.
		log.Warningf("no handover at shutdown: %v", err)
		key = nil
	}
	h := &Handover{key: key, listeners: ownInodes}
	cfg.AddPlugin(func(next plugin.Handler) plugin.Handler {
		h.Next = next
		return h
	})
	if sr := conf.selfReady; sr != nil {
		c.OnStartup(sr.start)
		c.OnRestartFailed(sr.start)
		c.OnShutdown(sr.stop)
	}
	// A final shutdown only (not a reload): the lameduck of health runs in
	// the same callbacks, so the watch runs in a goroutine of its own,
	// until the process exits.
	c.OnFinalShutdown(func() error {
		h.stopping.Store(true)
		socks, err := ownSockets()
		if err != nil {
			log.Warning(err)
			return nil
		}
		go newWatch(key).run(context.Background(), socks)
		return nil
	})
	return nil
}

// parse reads
//
//	handover {
//	    key FILE
//	    self_ready SOCKET ADDRESS
//	}
func parse(c *caddy.Controller) (config, error) {
	var conf config
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return conf, plugin.ErrOnce
		}
		if len(c.RemainingArgs()) != 0 {
			return conf, c.ArgErr()
		}
		for c.NextBlock() {
			if err := parseProperty(c, &conf); err != nil {
				return conf, err
			}
		}
	}
	if conf.keyFile == "" {
		return conf, c.Err("needs a key file (key FILE): without one a successor cannot be told from a stranger")
	}
	return conf, nil
}

func parseProperty(c *caddy.Controller, conf *config) error {
	switch c.Val() {
	case "key":
		args := c.RemainingArgs()
		if len(args) != 1 {
			return c.ArgErr()
		}
		conf.keyFile = args[0]
	case "self_ready":
		args := c.RemainingArgs()
		if len(args) != 2 {
			return c.ArgErr()
		}
		if _, _, err := net.SplitHostPort(args[1]); err != nil {
			return fmt.Errorf("handover: self_ready address %q: %w", args[1], err)
		}
		conf.selfReady = &selfReady{path: args[0], addr: args[1], owns: ownsInode}
	default:
		return c.Errf("unknown property %q", c.Val())
	}
	return nil
}
