package mesosschema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/changes"
	"github.com/schemadns/schemadns/plugin/pkg/compress"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/stanza"
)

func init() { plugin.Register(pluginName, setup) }

// Defaults, as Mesos-DNS has them unless said otherwise.
const (
	defaultZone    = "mesos."
	defaultTTL     = 60
	defaultRefresh = 60 * time.Second
	// Mesos-DNS waits 300 s for a state; a master that hangs that long
	// holds the next candidate back as long.
	defaultStateTimeout   = 30 * time.Second
	defaultZKTimeout      = 30 * time.Second
	defaultStartupTimeout = 5 * time.Second
	// The SOA's timers and names (Mesos-DNS's SOARefresh and the rest;
	// SOAMname ns1.<domain>, SOARname root.ns1.<domain>).
	defaultSOARefresh = 60
	defaultSOARetry   = 600
	defaultSOAExpire  = 86400
	defaultSOAMinTTL  = 60
)

func setup(c *caddy.Controller) error {
	m, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	m.NSAddrs = stanza.ListenAddrs(dnsserver.GetConfig(c).ListenHosts)
	m.gen.nsAddrs = m.NSAddrs
	m.owner = c.Context()
	compress.Install(dnsserver.GetConfig(c))
	c.OnStartup(m.start)
	c.OnShutdown(m.shutdown)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		m.Next = next
		return m
	})
	return nil
}

// newMesosschema is a handler with the default options.
func newMesosschema() *Mesosschema {
	m := &Mesosschema{refresh: defaultRefresh, startupTimeout: defaultStartupTimeout,
		master: mesosmaster.Config{Timeout: defaultStateTimeout, ZKTimeout: defaultZKTimeout,
			OnRedirectRefused: metrics.redirectsRefused.Inc}}
	m.Plugin, m.TTL, m.Replies, m.Names = pluginName, defaultTTL, metrics.Replies, dnszone.RecordNames
	m.SOA = dnszone.SOAFields{Refresh: defaultSOARefresh, Retry: defaultSOARetry, Expire: defaultSOAExpire, MinTTL: defaultSOAMinTTL}
	m.gen.ipSources = mesosstate.DefaultIPSources
	m.Schema = m
	return m
}

// parse reads one mesosschema stanza.
func parse(c *caddy.Controller) (*Mesosschema, error) {
	m := newMesosschema()
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return nil, c.Err("mesosschema can be used only once per server block")
		}
		args := c.RemainingArgs()
		zones, err := stanza.ParseZones(args, []string{defaultZone})
		if err != nil {
			return nil, c.Errf("%v", err)
		}
		m.Zones = zones
		cf := &fileConfig{stanza: map[string]bool{}, zoneArgs: args, serverKeys: c.ServerBlockKeys}
		if err := m.parseBlock(c, cf); err != nil {
			return nil, err
		}
		if err := m.applyConfig(c, cf); err != nil {
			return nil, err
		}
		if err := m.complete(); err != nil {
			return nil, c.Errf("%v", err)
		}
	}
	return m, nil
}

// parseBlock reads the stanza's options; `config FILE` is noted in cf, to
// be applied after them, and so is every option written, which overrides
// the file's field.
func (m *Mesosschema) parseBlock(c *caddy.Controller, cf *fileConfig) error {
	for c.NextBlock() {
		opt := c.Val()
		if opt == "config" {
			args := c.RemainingArgs()
			if len(args) != 1 {
				return c.ArgErr()
			}
			if cf.path != "" {
				return c.Errf("config: given twice (%s, %s)", cf.path, args[0])
			}
			cf.path = args[0]
			continue
		}
		cf.stanza[opt] = true
		if err := m.parseOption(c); err != nil {
			return err
		}
	}
	return nil
}

// applyConfig applies the Mesos-DNS config.json cf names, if any, and logs
// its warnings, one line each.
func (m *Mesosschema) applyConfig(c *caddy.Controller, cf *fileConfig) error {
	if cf.path == "" {
		return nil
	}
	if err := m.applyConfigFile(cf); err != nil {
		return c.Errf("%v", fmt.Errorf("config %s: %w", cf.path, err))
	}
	for _, w := range cf.warnings {
		log.Warningf("config %s: %s", cf.path, w)
	}
	return nil
}

func (m *Mesosschema) parseOption(c *caddy.Controller) error {
	opt := c.Val()
	args := c.RemainingArgs()
	if ok, err := m.parseMasterOption(c, opt, args); ok {
		return err
	}
	if ok, err := m.parseSOAOption(c, opt, args); ok {
		return err
	}
	switch opt {
	case "refresh":
		d, err := duration(c, opt, args)
		if err != nil {
			return err
		}
		if d < time.Second {
			return c.Errf("refresh: %s is shorter than a second", d)
		}
		m.refresh = d
	case "ttl":
		ttl, err := stanza.ParseTTL(c, args)
		if err != nil {
			return err
		}
		m.TTL = ttl
	case "ip_sources":
		if err := mesosstate.CheckIPSources(args); err != nil {
			return c.Errf("ip_sources: %v", err)
		}
		m.gen.ipSources = args
	case "enforce_rfc952":
		if len(args) != 0 {
			return c.ArgErr()
		}
		m.gen.rfc952 = true
	case "http":
		if len(args) != 1 {
			return c.ArgErr()
		}
		addr, err := httpListenAddr(args[0])
		if err != nil {
			return c.Errf("http: %v", err)
		}
		m.httpAddr, m.keepState = addr, true
	case "fallthrough":
		m.Fall.SetZonesFromArgs(args)
	case "startup_timeout":
		d, err := stanza.ParseStartupTimeout(c, args)
		if err != nil {
			return err
		}
		m.startupTimeout = d
	default:
		return c.Errf("unknown property %q", opt)
	}
	return nil
}

// parseMasterOption reads the options that say how to reach the masters;
// false when opt is none of them.
func (m *Mesosschema) parseMasterOption(c *caddy.Controller, opt string, args []string) (bool, error) {
	var err error
	switch opt {
	case "masters":
		if len(args) == 0 {
			return true, c.ArgErr()
		}
		m.master.Masters = append(m.master.Masters, args...)
		m.gen.masters = m.master.Masters
	case "zk":
		if len(args) != 1 {
			return true, c.ArgErr()
		}
		m.master.ZK = args[0]
	case "state_timeout":
		m.master.Timeout, err = duration(c, opt, args)
	case "zk_timeout":
		m.master.ZKTimeout, err = duration(c, opt, args)
	case "tls":
		if len(args) > 1 {
			return true, c.ArgErr()
		}
		m.master.Scheme = "https"
		if len(args) == 1 {
			m.master.CAFile = args[0]
		}
	case "tls_insecure_skip_verify":
		if len(args) != 0 {
			return true, c.ArgErr()
		}
		m.master.InsecureSkipVerify = true
	case "basic_auth":
		if len(args) != 2 {
			return true, c.ArgErr()
		}
		m.master.Auth.Basic = &mesosmaster.BasicAuth{Principal: args[0], Secret: args[1]}
	case "basic_auth_file":
		if len(args) != 1 {
			return true, c.ArgErr()
		}
		b, err := readCredentialFile(args[0])
		if err != nil {
			return true, c.Errf("basic_auth_file: %v", err)
		}
		m.master.Auth.Basic = b
	case "insecure_credentials":
		if len(args) != 0 {
			return true, c.ArgErr()
		}
		m.master.InsecureCredentials = true
	case "max_state_size":
		if len(args) != 1 {
			return true, c.ArgErr()
		}
		n, err := parseSize(args[0])
		if err != nil {
			return true, c.Errf("max_state_size: %v", err)
		}
		m.master.MaxBodySize = n
	case "iam":
		if len(args) != 1 {
			return true, c.ArgErr()
		}
		m.master.Auth.IAM = &mesosmaster.IAMAuth{ConfigFile: args[0]}
	default:
		return false, nil
	}
	return true, err
}

// parseSOAOption reads the SOA's options; false when opt is none of them.
func (m *Mesosschema) parseSOAOption(c *caddy.Controller, opt string, args []string) (bool, error) {
	timer := map[string]*uint32{"soa_refresh": &m.SOA.Refresh, "soa_retry": &m.SOA.Retry,
		"soa_expire": &m.SOA.Expire, "soa_minttl": &m.SOA.MinTTL}
	if p, ok := timer[opt]; ok {
		if len(args) != 1 {
			return true, c.ArgErr()
		}
		n, err := strconv.ParseUint(args[0], 10, 32)
		if err != nil || n == 0 {
			return true, c.Errf("%s: %q is not a number of seconds above 0", opt, args[0])
		}
		*p = uint32(n)
		return true, nil
	}
	switch opt {
	case "soa_mname", "soa_rname":
		if len(args) != 1 {
			return true, c.ArgErr()
		}
		name, err := soaName(args[0])
		if err != nil {
			return true, c.Errf("%s: %v", opt, err)
		}
		if opt == "soa_mname" {
			m.SOA.NS = name
		} else {
			m.SOA.Mbox = name
		}
		return true, nil
	}
	return false, nil
}

// soaName reads the SOA's MNAME or mailbox: fully qualified, lower case;
// Mesos-DNS accepts user@host for the mailbox.
func soaName(s string) (string, error) {
	name := dns.Fqdn(strings.ToLower(strings.Replace(s, "@", ".", 1)))
	if _, ok := dns.IsDomainName(name); !ok || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("%q is not a domain name", s)
	}
	return name, nil
}

// duration parses the one duration argument of opt.
func duration(c *caddy.Controller, opt string, args []string) (time.Duration, error) {
	if len(args) != 1 {
		return 0, c.ArgErr()
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d <= 0 {
		return 0, c.Errf("%s: %q is not a duration above 0", opt, args[0])
	}
	return d, nil
}

// complete checks the options together and fills in what depends on
// several: the SOA names, the nameserver's own name, the longest name.
func (m *Mesosschema) complete() error {
	if err := m.master.Validate(); err != nil {
		if errors.Is(err, mesosmaster.ErrInsecureCredentials) {
			return fmt.Errorf("%w (fetch over https with tls, or allow it with insecure_credentials)", err)
		}
		return err
	}
	zone := m.forwardZone()
	if zone == "" {
		return fmt.Errorf("zones %v: at least one forward zone (such as mesos) is needed", m.Zones)
	}
	if m.SOA.NS == "" {
		m.SOA.NS = "ns1." + zone
	}
	if m.SOA.Mbox == "" {
		m.SOA.Mbox = "root." + m.SOA.NS
	}
	if rest, ok := dnsname.TrimZone(m.SOA.NS, zone); ok && rest != "" {
		m.gen.nsName = rest
	}
	longest := 0
	for _, z := range m.Zones {
		if !dnsname.IsReverseZone(z) {
			longest = max(longest, len(z))
		}
	}
	// 254 characters with the final dot, less the zone and the dot before it.
	m.gen.maxName = 254 - longest - 1
	return nil
}

// start begins polling the masters (see dnszone.Server.Start) and the
// HTTP interface.
func (m *Mesosschema) start() error {
	client, err := mesosmaster.New(m.master)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	m.poller = newPoller(m, client)
	if err := m.Start(changes.Consumer{StartupTimeout: m.startupTimeout, Connect: m.poller.connect}, metrics.Metrics); err != nil {
		return err
	}
	if m.httpAddr != "" {
		if m.http, err = listenHTTP(m.httpAddr, m.routes(), m.owner); err != nil {
			_ = m.shutdown()
			return plugin.Error(pluginName, fmt.Errorf("http %s: %w", m.httpAddr, err))
		}
	}
	return nil
}

// shutdown stops the polls and the HTTP interface; for OnShutdown.
func (m *Mesosschema) shutdown() error {
	if m.http != nil {
		m.http.release()
		m.http = nil
	}
	return m.Shutdown()
}
