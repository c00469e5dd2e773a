package kubeschema

import (
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/upstream"
	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/compress"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	"github.com/schemadns/schemadns/plugin/pkg/stanza"
	"k8s.io/apimachinery/pkg/labels"
)

func init() { plugin.Register(pluginName, setup) }

// Defaults, as in CoreDNS's kubernetes plugin.
const (
	defaultTTL            = 5
	defaultStartupTimeout = 5 * time.Second
)

func setup(c *caddy.Controller) error {
	k, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	k.upstream = upstream.New()
	k.NSAddrs = stanza.ListenAddrs(dnsserver.GetConfig(c).ListenHosts)
	compress.Install(dnsserver.GetConfig(c))
	c.OnStartup(k.start)
	c.OnShutdown(k.Shutdown)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		k.Next = next
		return k
	})
	return nil
}

// newKubeschema is a handler with the default options.
func newKubeschema() *Kubeschema {
	k := &Kubeschema{opts: options{startupTimeout: defaultStartupTimeout}}
	k.Plugin, k.TTL, k.Version, k.Replies = pluginName, defaultTTL, SchemaVersion, metrics.Replies
	k.Schema = k
	return k
}

// parse reads one kubeschema stanza.
func parse(c *caddy.Controller) (*Kubeschema, error) {
	k := newKubeschema()
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, c.Err("kubeschema can be used only once per server block")
		}
		zones, err := stanza.ParseZones(c.RemainingArgs(), c.ServerBlockKeys)
		if err != nil {
			return nil, c.Errf("%v", err)
		}
		k.Zones = zones
		for c.NextBlock() {
			if err := k.parseOption(c); err != nil {
				return nil, err
			}
		}
		if k.Zonal && k.opts.noEndpoints {
			return nil, c.Err("zonal names are made of endpoints: remove noendpoints or zonal")
		}
		if err := kubesource.ShareLimits(c, pluginName, &k.cfg); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func (k *Kubeschema) parseOption(c *caddy.Controller) error {
	opt := c.Val()
	args := c.RemainingArgs()
	need := func(min, max int) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			return c.ArgErr()
		}
		return nil
	}
	if ok, err := kubesource.ParseConnectionOption(c, opt, args, &k.cfg); ok {
		return err
	}
	switch opt {
	case "namespaces":
		if err := need(1, -1); err != nil {
			return err
		}
		k.opts.namespaces = map[string]bool{}
		for _, ns := range args {
			k.opts.namespaces[strings.ToLower(ns)] = true
		}
	case "labels":
		if err := need(1, -1); err != nil {
			return err
		}
		sel, err := labels.Parse(strings.Join(args, " "))
		if err != nil {
			return c.Errf("labels: %v", err)
		}
		k.cfg.LabelSelector = sel.String()
	case "namespace_labels":
		if err := need(1, -1); err != nil {
			return err
		}
		sel, err := labels.Parse(strings.Join(args, " "))
		if err != nil {
			return c.Errf("namespace_labels: %v", err)
		}
		k.opts.namespaceLabels = sel
	case "pods":
		if err := need(1, 1); err != nil {
			return err
		}
		mode, ok := map[string]podMode{"disabled": podsDisabled, "insecure": podsInsecure, "verified": podsVerified}[args[0]]
		if !ok {
			return c.Errf("pods: want disabled, insecure or verified, got %q", args[0])
		}
		k.opts.pods = mode
	case "endpoint_pod_names":
		if err := need(0, 0); err != nil {
			return err
		}
		k.opts.endpointPodNames = true
		k.cfg.EndpointPodNames = true
	case "ttl":
		ttl, err := stanza.ParseTTL(c, args)
		if err != nil {
			return err
		}
		k.TTL = ttl
	case "noendpoints":
		if err := need(0, 0); err != nil {
			return err
		}
		k.opts.noEndpoints = true
	case "reverse_cidrs":
		r, err := parseReverseCIDRs(args, k.Zones)
		if err != nil {
			return c.Errf("%v", err)
		}
		k.opts.reverse = r
	case "zonal":
		if err := need(0, 0); err != nil {
			return err
		}
		k.Zonal, k.opts.zonal = true, true
	case "ignore":
		if err := need(1, 1); err != nil {
			return err
		}
		if args[0] != "empty_service" {
			return c.Errf("ignore: unknown value %q (want empty_service)", args[0])
		}
		k.opts.ignoreEmptyService = true
	case "fallthrough":
		k.Fall.SetZonesFromArgs(args)
	case "startup_timeout":
		d, err := stanza.ParseStartupTimeout(c, args)
		if err != nil {
			return err
		}
		k.opts.startupTimeout = d
	default:
		return c.Errf("unknown property %q", opt)
	}
	return nil
}

// start connects to the shared cache (see dnszone.Server.Start).
func (k *Kubeschema) start() error {
	src := &kubesource.Source{Config: k.cfg, Resources: k.resources(),
		NewBuilder: func(h *kubesource.Handle) kubesource.Builder { return newBuilder(k, h) }}
	err := k.Start(changes.Consumer{StartupTimeout: k.opts.startupTimeout, Connect: src.Connect}, metrics)
	if err != nil {
		return err
	}
	k.data = src.Handle
	return nil
}
