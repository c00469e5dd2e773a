package gensearchpath

import (
	"errors"
	"fmt"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/pkg/proxy"
	"github.com/coredns/coredns/plugin/pkg/transport"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/searchpath"
)

const pluginName = "gensearchpath"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

func setup(c *caddy.Controller) error {
	g, err := parseStanza(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	c.OnStartup(g.start)
	c.OnShutdown(g.stop)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		g.Next = next
		return g
	})
	return nil
}

// parseStanza reads one gensearchpath stanza.
func parseStanza(c *caddy.Controller) (*Gensearchpath, error) {
	g := &Gensearchpath{code: searchpath.DefaultCode, maxfails: defaultMaxFails}
	var to []string
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, c.Err("gensearchpath can be used only once per server block")
		}
		args := c.RemainingArgs()
		if len(args) != 3 {
			return nil, c.Errf("want AUTOPATH_SUFFIX CLUSTER_SUFFIX SCHEMA (such as ap.k8s.io cluster.local %s), got %d arguments", searchpath.SchemaV1, len(args))
		}
		if args[2] != searchpath.SchemaV1 {
			return nil, c.Errf("schema version %q is not supported (only %s)", args[2], searchpath.SchemaV1)
		}
		form, err := searchpath.NewForm(args[0], args[1])
		if err != nil {
			return nil, c.Errf("%v", err)
		}
		g.form = form
		for c.NextBlock() {
			if err := g.parseOption(c, &to); err != nil {
				return nil, err
			}
		}
	}
	if len(to) == 0 {
		return nil, c.Err("gensearchpath needs forward TO... (the cluster DNS)")
	}
	if err := g.checkOption(); err != nil {
		return nil, c.Errf("%v", err)
	}
	proxies, err := newProxies(to, g.form.Cluster())
	if err != nil {
		return nil, c.Errf("forward: %v", err)
	}
	g.proxies = proxies
	return g, nil
}

func (g *Gensearchpath) parseOption(c *caddy.Controller, to *[]string) error {
	opt := c.Val()
	args := c.RemainingArgs()
	switch opt {
	case "forward":
		if len(args) == 0 {
			return c.ArgErr()
		}
		*to = append(*to, args...)
	case "search":
		if len(args) == 0 {
			return c.ArgErr()
		}
		for _, a := range args {
			domains, err := searchDomains(a)
			if err != nil {
				return c.Errf("search: %v", err)
			}
			g.host = append(g.host, domains...)
		}
	case "option_code":
		if len(args) != 1 {
			return c.ArgErr()
		}
		code, err := searchpath.ParseCode(args[0])
		if err != nil {
			return c.Errf("option_code: %v", err)
		}
		g.code = code
	case "fallthrough":
		if len(args) != 0 {
			return c.ArgErr()
		}
		g.fall = true
	case "force_tcp":
		if len(args) != 0 {
			return c.ArgErr()
		}
		g.forceTCP = true
	default:
		return c.Errf("unknown property %q", opt)
	}
	return nil
}

// searchDomains reads one argument of search: a domain, or an absolute
// path to a resolv.conf whose search domains are taken in order.
func searchDomains(arg string) ([]string, error) {
	if !strings.HasPrefix(arg, "/") {
		d := strings.TrimSuffix(arg, ".")
		return []string{d}, searchpath.CheckPath(d)
	}
	cc, err := dns.ClientConfigFromFile(arg)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", arg, err)
	}
	var out []string
	for _, s := range cc.Search {
		d := strings.TrimSuffix(s, ".")
		if d == "" {
			continue
		}
		if err := searchpath.CheckPath(d); err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// checkOption makes sure the option of the longest namespace (63 octets)
// fits the grammar's limits, and warns when there are more paths than the
// cluster side accepts by default.
func (g *Gensearchpath) checkOption() error {
	paths := g.form.PathsV1(strings.Repeat("n", 63), g.host...)
	if _, err := searchpath.Format(paths); err != nil {
		return fmt.Errorf("the SearchPaths option would not fit: %w", err)
	}
	if len(paths) > searchpath.DefaultMaxPaths {
		log.Warningf("%d search paths: more than edns0autopath accepts by default (max_search_paths %d)", len(paths), searchpath.DefaultMaxPaths)
	}
	return nil
}

var errTransport = errors.New("only plain DNS upstreams (IP[:PORT] or dns://) are supported")

// newProxies makes one proxy per upstream, health-checked with an NS query
// for the cluster suffix (which the cluster DNS answers itself).
func newProxies(to []string, cluster string) ([]*proxy.Proxy, error) {
	hosts, err := parse.HostPortOrFile(to...)
	if err != nil {
		return nil, err
	}
	var out []*proxy.Proxy
	for _, h := range hosts {
		trans, addr := parse.Transport(h)
		if trans != transport.DNS {
			return nil, fmt.Errorf("%s: %w", h, errTransport)
		}
		p := proxy.NewProxy(pluginName, addr, trans)
		p.SetReadTimeout(readTimeout)
		p.SetExpire(connExpire)
		p.GetHealthchecker().SetDomain(dns.Fqdn(cluster))
		out = append(out, p)
	}
	return out, nil
}

func (g *Gensearchpath) start() error {
	for _, p := range g.proxies {
		p.Start(hcInterval)
	}
	return nil
}

func (g *Gensearchpath) stop() error {
	for _, p := range g.proxies {
		p.Stop()
	}
	return nil
}
