package multicluster

import (
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/compress"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	"github.com/schemadns/schemadns/plugin/pkg/stanza"
)

func init() { plugin.Register(pluginName, setup) }

// Defaults, as kubeschema has them.
const (
	defaultZone           = "clusterset.local."
	defaultTTL            = 5
	defaultStartupTimeout = 5 * time.Second
)

func setup(c *caddy.Controller) error {
	m, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	m.NSAddrs = stanza.ListenAddrs(dnsserver.GetConfig(c).ListenHosts)
	compress.Install(dnsserver.GetConfig(c))
	c.OnStartup(m.start)
	c.OnShutdown(m.Shutdown)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		m.Next = next
		return m
	})
	return nil
}

// newMulticluster is a handler with the default options.
func newMulticluster() *Multicluster {
	m := &Multicluster{startupTimeout: defaultStartupTimeout}
	m.Plugin, m.TTL, m.Version, m.Replies = pluginName, defaultTTL, SchemaVersion, metrics.Replies
	m.Schema = m
	return m
}

// parse reads one multicluster stanza.
func parse(c *caddy.Controller) (*Multicluster, error) {
	m := newMulticluster()
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, c.Err("multicluster can be used only once per server block")
		}
		zones, err := stanza.ParseZones(c.RemainingArgs(), []string{defaultZone})
		if err != nil {
			return nil, c.Errf("%v", err)
		}
		m.Zones = zones
		for c.NextBlock() {
			if err := m.parseOption(c); err != nil {
				return nil, err
			}
		}
		if m.forwardZone() == "" {
			return nil, c.Errf("zones %v: at least one forward zone (such as clusterset.local) is needed, PTR records point into it", m.Zones)
		}
		if err := kubesource.ShareLimits(c, pluginName, &m.cfg); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Multicluster) parseOption(c *caddy.Controller) error {
	opt := c.Val()
	args := c.RemainingArgs()
	if ok, err := kubesource.ParseConnectionOption(c, opt, args, &m.cfg); ok {
		return err
	}
	switch opt {
	case "ttl":
		ttl, err := stanza.ParseTTL(c, args)
		if err != nil {
			return err
		}
		m.TTL = ttl
	case "fallthrough":
		m.Fall.SetZonesFromArgs(args)
	case "startup_timeout":
		d, err := stanza.ParseStartupTimeout(c, args)
		if err != nil {
			return err
		}
		m.startupTimeout = d
	case "cluster_id":
		if len(args) != 1 {
			return c.ArgErr()
		}
		// Cluster IDs are compared in lower case, as the slices' are.
		if id := strings.ToLower(args[0]); !dnsname.IsLabel(id) {
			return c.Errf("cluster_id %q is not a DNS label", args[0])
		}
		m.clusterID = strings.ToLower(args[0])
	default:
		return c.Errf("unknown property %q", opt)
	}
	return nil
}

// start follows the id.k8s.io ClusterProperty unless cluster_id names
// the local cluster, and connects to the shared cache, the same one as
// kubeschema's when the connection options are equal (see
// dnszone.Server.Start).
func (m *Multicluster) start() error {
	if m.clusterID == "" {
		if err := m.watchClusterID(); err != nil {
			return err
		}
	}
	src := &kubesource.Source{Config: m.cfg, Resources: watched,
		NewBuilder: func(h *kubesource.Handle) kubesource.Builder {
			b := newBuilder(m, h)
			b.clusterID = m.clusterID
			if m.learnt != nil {
				m.learnt.attach(b)
			}
			return b
		}}
	err := m.Start(changes.Consumer{StartupTimeout: m.startupTimeout, Connect: src.Connect}, metrics)
	if err != nil {
		m.Shutdown() // the ClusterProperty watch
	}
	return err
}

// Shutdown ends the ClusterProperty watch and what dnszone.Server.Start
// started; for OnShutdown.
func (m *Multicluster) Shutdown() error {
	if m.stopWatch != nil {
		m.stopWatch()
		m.stopWatch = nil
	}
	return m.Server.Shutdown()
}
