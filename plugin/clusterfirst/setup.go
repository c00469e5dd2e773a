package clusterfirst

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	pkgparse "github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/pkg/transport"
	"github.com/schemadns/schemadns/plugin/pkg/stanza"
)

const pluginName = "clusterfirst"

func init() { plugin.Register(pluginName, setup) }

// The thresholds of the queue delay, from make overload (docs/overload.md):
// a queue kept near 1 ms keeps the run queue emptying often, and only then
// does the runtime poll the network for the listener's next packets
// (otherwise sysmon does, every 10 ms), so that the queries' wait in the
// socket stays short too. With 1 ms and 3 ms the p99 of answered cluster
// queries stayed under 10 ms at twice the rate a core serves, where 5 ms
// and 10 ms let it reach 26-34 ms; 0.5 ms shed half the external names
// already at that rate.
const (
	defaultTarget = 1 * time.Millisecond
	defaultBound  = 3 * time.Millisecond
)

var errNoZones = errors.New("no cluster zones: none given, and no plugin of the server block serves any (kubeschema, multicluster, mesosschema)")

func setup(c *caddy.Controller) error {
	cf, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	// A silent drop means a retry after a timeout over UDP; on DNS over
	// QUIC (whose addresses are UDP ones too) it would end a stream
	// without a reply. Every key is checked: the block's plugins serve all.
	for _, key := range c.ServerBlockKeys {
		if tr, _ := pkgparse.Transport(key); tr != transport.DNS {
			return plugin.Error(pluginName, c.Errf("only plain DNS server blocks are supported; %q uses %s", key, tr))
		}
	}
	cfg := dnsserver.GetConfig(c)
	// At startup every plugin of the block has its handler.
	c.OnStartup(func() error {
		primeDropped(cfg)
		cf.sampler.port = listenPort(cfg.Port)
		return cf.start(cfg.Handlers())
	})
	c.OnShutdown(cf.sampler.stop)
	cfg.AddPlugin(func(next plugin.Handler) plugin.Handler {
		cf.Next = next
		return cf
	})
	return nil
}

// parse reads one clusterfirst stanza.
func parse(c *caddy.Controller) (*Clusterfirst, error) {
	cf := &Clusterfirst{}
	target, bound := defaultTarget, defaultBound
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, plugin.ErrOnce
		}
		zones, err := stanza.ParseZones(c.RemainingArgs(), nil)
		if err != nil {
			return nil, c.Err(err.Error())
		}
		cf.Zones = zones
		for c.NextBlock() {
			opt := c.Val()
			switch opt {
			case "target", "bound":
				d, err := parseDuration(c, opt)
				if err != nil {
					return nil, err
				}
				if opt == "target" {
					target = d
				} else {
					bound = d
				}
			default:
				return nil, c.Errf("unknown property %q", opt)
			}
		}
	}
	if bound <= target {
		return nil, c.Errf("bound %v must be longer than target %v", bound, target)
	}
	cf.sampler = newSampler(target, bound)
	cf.signal = cf.sampler
	return cf, nil
}

// parseDuration reads the one positive duration of option opt.
func parseDuration(c *caddy.Controller, opt string) (time.Duration, error) {
	args := c.RemainingArgs()
	if len(args) != 1 {
		return 0, c.ArgErr()
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d <= 0 {
		return 0, c.Errf("%s: %q is not a positive duration", opt, args[0])
	}
	return d, nil
}

// start finds the cluster zones among the block's handlers when the
// stanza named none, and starts the sampler.
func (cf *Clusterfirst) start(handlers []plugin.Handler) error {
	if len(cf.Zones) == 0 {
		cf.Zones = servedZones(handlers)
	}
	if len(cf.Zones) == 0 {
		return plugin.Error(pluginName, errNoZones)
	}
	cf.sampler.zones = cf.Zones
	return cf.sampler.start()
}

// zoneServer is a plugin that answers zones from memory: the schema
// plugins (kubeschema, multicluster, mesosschema).
type zoneServer interface{ ServedZones() []string }

// servedZones are the zones of every zoneServer among handlers, lower
// case, sorted, once each.
func servedZones(handlers []plugin.Handler) []string {
	var zones []string
	for _, h := range handlers {
		if zs, ok := h.(zoneServer); ok {
			for _, z := range zs.ServedZones() {
				zones = append(zones, strings.ToLower(z))
			}
		}
	}
	slices.Sort(zones)
	return slices.Compact(zones)
}

// listenPort is the server's port as a number (0, and no listener
// followed, if it is not one).
func listenPort(port string) uint16 {
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0
	}
	return uint16(n)
}

// primeDropped exports the drop counters at 0 for every listener of the
// block, so that an alert on their rate sees a series before the first
// drop. The server label is dnsserver's name for the listener.
func primeDropped(cfg *dnsserver.Config) {
	for _, h := range cfg.ListenHosts {
		addr, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(h, cfg.Port))
		if err != nil {
			continue // dnsserver fails the start on it
		}
		for _, class := range []string{classCluster, classOther} {
			droppedTotal.WithLabelValues(cfg.Transport+"://"+addr.String(), class)
		}
	}
}
