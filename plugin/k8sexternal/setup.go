package k8sexternal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/stanza"
)

func init() { plugin.Register(pluginName, setup) }

// Defaults, as in CoreDNS's k8s_external.
const (
	defaultTTL  = 5
	defaultApex = "dns"
)

// backendPlugins are the plugins k8s_external reads the cluster from, in
// order of preference: a server block has one of them.
var backendPlugins = []string{"kubeschema", "kubernetes"}

// Configuration errors found at start-up.
var (
	// errNoBackend: neither backend plugin is in the server block.
	errNoBackend = errors.New("needs the kubeschema or the kubernetes plugin in the same server block; neither is loaded")
	// errNotBackend: the plugin has a backend's name but not its methods.
	errNotBackend = errors.New("plugin does not implement the k8s_external backend methods (External, ExternalAddress, ExternalSerial)")
)

func setup(c *caddy.Controller) error {
	e, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	e.upstream = upstream.New()
	cfg := dnsserver.GetConfig(c)
	// The backend is looked up once every plugin of the block is set up
	// and its chain built.
	c.OnStartup(func() error { return e.bind(cfg.Handler) })
	cfg.AddPlugin(func(next plugin.Handler) plugin.Handler {
		e.Next = next
		return e
	})
	return nil
}

// bind finds the backend among the server block's plugins, which handler
// looks up by name.
func (e *External) bind(handler func(name string) plugin.Handler) error {
	for _, name := range backendPlugins {
		h := handler(name)
		if h == nil {
			continue
		}
		b, ok := h.(backend)
		if !ok {
			return plugin.Error(pluginName, fmt.Errorf("%s: %w", name, errNotBackend))
		}
		e.backend = b
		return nil
	}
	return plugin.Error(pluginName, errNoBackend)
}

// parse reads the one k8s_external stanza of a server block.
func parse(c *caddy.Controller) (*External, error) {
	e := &External{apex: defaultApex, ttl: defaultTTL}
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, c.Err("k8s_external can be used only once per server block")
		}
		zones, err := stanza.ParseZones(c.RemainingArgs(), c.ServerBlockKeys)
		if err != nil {
			return nil, c.Errf("%v", err)
		}
		e.Zones = zones
		for c.NextBlock() {
			if err := e.parseOption(c); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (e *External) parseOption(c *caddy.Controller) error {
	opt := c.Val()
	args := c.RemainingArgs()
	switch opt {
	case "apex":
		if len(args) != 1 {
			return c.ArgErr()
		}
		apex := strings.ToLower(args[0])
		if !dnsname.IsLabel(apex) {
			return c.Errf("apex: %q is not a DNS label", args[0])
		}
		e.apex = apex
	case "ttl":
		ttl, err := stanza.ParseTTL(c, args)
		if err != nil {
			return err
		}
		e.ttl = ttl
	case "headless":
		if len(args) != 0 {
			return c.ArgErr()
		}
		e.headless = true
	case "fallthrough":
		e.Fall.SetZonesFromArgs(args)
	default:
		return c.Errf("unknown property %q", opt)
	}
	return nil
}
