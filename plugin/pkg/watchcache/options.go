package watchcache

import (
	"strconv"
	"time"

	"github.com/coredns/caddy"
)

// ParseConnectionOption handles the Corefile options that say how to reach
// the API server, the same for every plugin that reads the cache:
//
//	kubeconfig KUBECONFIG [CONTEXT]
//	endpoint URL
//	tls CERT KEY CACERT
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
	default:
		return false, nil
	}
	return true, nil
}

// MaxTTL is the largest ttl the cache's plugins accept, in seconds.
const MaxTTL = 3600

// ParseTTL parses the argument of `ttl SECONDS`: 0 to MaxTTL.
func ParseTTL(c *caddy.Controller, args []string) (uint32, error) {
	if len(args) != 1 {
		return 0, c.ArgErr()
	}
	ttl, err := strconv.Atoi(args[0])
	if err != nil || ttl < 0 || ttl > MaxTTL {
		return 0, c.Errf("ttl must be a whole number of seconds from 0 to %d, got %q", MaxTTL, args[0])
	}
	return uint32(ttl), nil
}

// ParseStartupTimeout parses the argument of `startup_timeout DURATION`.
func ParseStartupTimeout(c *caddy.Controller, args []string) (time.Duration, error) {
	if len(args) != 1 {
		return 0, c.ArgErr()
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d < 0 {
		return 0, c.Errf("startup_timeout: %q is not a duration", args[0])
	}
	return d, nil
}
