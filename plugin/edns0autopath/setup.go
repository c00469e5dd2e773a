package edns0autopath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/searchpath"
)

const pluginName = "edns0autopath"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

// Defaults of the stanza.
const (
	defaultSuffix        = "ap.k8s.io"
	defaultClusterSuffix = "cluster.local"
	// maxMaxPaths bounds max_search_paths: every path is a query down the
	// chain, so the limit is also the amplification a client can cause.
	maxMaxPaths = 64
)

func setup(c *caddy.Controller) error {
	a, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		a.Next = next
		return a
	})
	return nil
}

// parse reads one edns0autopath stanza.
func parse(c *caddy.Controller) (*Edns0autopath, error) {
	a := &Edns0autopath{code: searchpath.DefaultCode, maxPaths: searchpath.DefaultMaxPaths, formerrLog: newLimiter()}
	suffix, cluster := defaultSuffix, defaultClusterSuffix
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, c.Err("edns0autopath can be used only once per server block")
		}
		args := c.RemainingArgs()
		for _, z := range args {
			if _, ok := dns.IsDomainName(z); !ok || strings.ContainsAny(z, "/:@ ") {
				return nil, c.Errf("zone %q is not a domain name", z)
			}
		}
		a.Zones = plugin.OriginsFromArgsOrServerBlock(args, c.ServerBlockKeys)
		if len(a.Zones) == 0 {
			a.Zones = []string{"."}
		}
		for c.NextBlock() {
			opt := c.Val()
			args := c.RemainingArgs()
			if len(args) != 1 {
				return nil, c.ArgErr()
			}
			switch opt {
			case "suffix", "cluster_suffix":
				if err := searchpath.CheckPath(strings.TrimSuffix(args[0], ".")); err != nil {
					return nil, c.Errf("%s: %v", opt, err)
				}
				if opt == "suffix" {
					suffix = args[0]
				} else {
					cluster = args[0]
				}
			case "option_code":
				code, err := searchpath.ParseCode(args[0])
				if err != nil {
					return nil, c.Errf("option_code: %v", err)
				}
				a.code = code
			case "max_search_paths":
				n, err := strconv.Atoi(args[0])
				if err != nil || n < 1 || n > maxMaxPaths {
					return nil, c.Errf("max_search_paths must be a whole number from 1 to %d, got %q", maxMaxPaths, args[0])
				}
				a.maxPaths = n
			default:
				return nil, c.Errf("unknown property %q", opt)
			}
		}
	}
	form, err := searchpath.NewForm(suffix, cluster)
	if err != nil {
		return nil, fmt.Errorf("suffix %s, cluster_suffix %s: %w", suffix, cluster, err)
	}
	a.form = form
	return a, nil
}
