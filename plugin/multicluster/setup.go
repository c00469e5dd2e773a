// Package multicluster is a placeholder until its own issue lands: the directive is
// registered so Corefiles parse, and queries pass on unchanged.
package multicluster

import (
	"context"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
)

const pluginName = "multicluster"

func init() { plugin.Register(pluginName, setup) }

func setup(c *caddy.Controller) error {
	for c.Next() {
		c.RemainingArgs()
		for c.NextBlock() {
			c.RemainingArgs()
		}
	}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		return passThrough{next: next}
	})
	return nil
}

type passThrough struct{ next plugin.Handler }

func (p passThrough) Name() string { return pluginName }

func (p passThrough) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	return plugin.NextOrFailure(pluginName, p.next, ctx, w, r)
}
