package kubesource

// The Corefile options that every plugin reading the shared cache
// (plugin/pkg/watchcache) spells the same way: how to reach the API
// server and the client's limits. (ttl and startup_timeout are parsed by
// each plugin's setup.go, with its own defaults.)

import (
	"fmt"
	"math"
	"strconv"

	"github.com/coredns/caddy"
)

// ParseConnectionOption handles the Corefile options that say how to reach
// the API server, the same for every plugin that reads the cache:
//
//	kubeconfig KUBECONFIG [CONTEXT]
//	endpoint URL
//	tls CERT KEY CACERT
//	apiserver_qps QPS
//	apiserver_burst BURST
//	apiserver_max_inflight MAX
//
// opt is the option's name and args its arguments. It reports whether opt
// was one of these; errors name the Corefile's file and line, and files
// are checked for readability here so the line is the option's own.
func ParseConnectionOption(c *caddy.Controller, opt string, args []string, cfg *Config) (bool, error) {
	switch opt {
	case "kubeconfig":
		if len(args) < 1 || len(args) > 2 {
			return true, c.ArgErr()
		}
		cfg.Kubeconfig, cfg.Context = args[0], ""
		if len(args) == 2 {
			cfg.Context = args[1]
		}
		if err := (Config{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context}).Validate(); err != nil {
			return true, c.Errf("%v", err)
		}
	case "endpoint":
		if len(args) != 1 {
			return true, c.ArgErr()
		}
		cfg.Endpoint = args[0]
	case "tls":
		if len(args) != 3 {
			return true, c.ArgErr()
		}
		cfg.TLSCert, cfg.TLSKey, cfg.TLSCA = args[0], args[1], args[2]
		if err := (Config{TLSCert: args[0], TLSKey: args[1], TLSCA: args[2]}).Validate(); err != nil {
			return true, c.Errf("tls: %v", err)
		}
	case "apiserver_qps", "apiserver_burst", "apiserver_max_inflight":
		return true, parseLimit(c, opt, args, cfg)
	default:
		return false, nil
	}
	return true, nil
}

// parseLimit parses one of the client limits into cfg.Limits: a number
// from 0 (the default) up.
func parseLimit(c *caddy.Controller, opt string, args []string, cfg *Config) error {
	if len(args) != 1 {
		return c.ArgErr()
	}
	if cfg.Limits == nil {
		cfg.Limits = &Limits{}
	}
	if opt == "apiserver_qps" {
		qps, err := strconv.ParseFloat(args[0], 32)
		if err != nil || qps < 0 || math.IsInf(qps, 0) || math.IsNaN(qps) {
			return c.Errf("apiserver_qps: want a number of calls a second, 0 or more, got %q", args[0])
		}
		cfg.Limits.QPS = float32(qps)
		return nil
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 {
		return c.Errf("%s: want a whole number, 0 or more, got %q", opt, args[0])
	}
	if opt == "apiserver_burst" {
		cfg.Limits.Burst = n
	} else {
		cfg.Limits.MaxInflight = n
	}
	return nil
}

// sharedLimits is the key, in a Corefile instance's storage, of the limits
// of each connection its stanzas use.
type sharedLimits struct{}

// ShareLimits makes the stanzas of one Corefile that use the same
// connection share their client limits, so the connection has one set:
// each value set by any of them applies to all, and two stanzas that set
// a value differently are an error. Call it when a stanza is parsed.
func ShareLimits(c *caddy.Controller, plugin string, cfg *Config) error {
	byConn, _ := c.Get(sharedLimits{}).(map[string]*namedLimits)
	if byConn == nil {
		byConn = map[string]*namedLimits{}
		c.Set(sharedLimits{}, byConn)
	}
	key := connectionKey(*cfg)
	shared, ok := byConn[key]
	if !ok {
		shared = &namedLimits{Limits: &Limits{}}
		byConn[key] = shared
	}
	if cfg.Limits != nil {
		if err := shared.merge(plugin, *cfg.Limits); err != nil {
			return c.Errf("%v", err)
		}
	}
	cfg.Limits = shared.Limits
	return nil
}

// connectionKey says which API server and objects cfg is for, whatever its
// limits: the stanzas with equal keys share a connection.
func connectionKey(cfg Config) string {
	cfg.Limits = nil
	return fmt.Sprintf("%+v", cfg)
}

// namedLimits are a connection's limits and which plugin set each.
type namedLimits struct {
	*Limits
	qpsBy, burstBy, inflightBy string
}

// merge takes the values l sets; one set differently before is an error
// naming both plugins.
func (n *namedLimits) merge(plugin string, l Limits) error {
	conflict := func(opt, by string, was, is any) error {
		return fmt.Errorf("%s sets %s %v, but %s, which shares its connection to the API server, set %v: one connection has one limit; set the same value in both or in one",
			plugin, opt, is, by, was)
	}
	if err := takeLimit("apiserver_qps", &n.QPS, &n.qpsBy, l.QPS, plugin, conflict); err != nil {
		return err
	}
	if err := takeLimit("apiserver_burst", &n.Burst, &n.burstBy, l.Burst, plugin, conflict); err != nil {
		return err
	}
	return takeLimit("apiserver_max_inflight", &n.MaxInflight, &n.inflightBy, l.MaxInflight, plugin, conflict)
}

// takeLimit takes value (0: not set) into *have, remembering the plugin
// that set it first, so that a clash names the stanza that set it.
func takeLimit[T float32 | int](opt string, have *T, by *string, value T, plugin string, conflict func(opt, by string, was, is any) error) error {
	switch {
	case value <= 0:
	case *have <= 0:
		*have, *by = value, plugin
	case *have != value:
		return conflict(opt, *by, *have, value)
	}
	return nil
}
