// Package mesosmaster finds the leading Mesos master and fetches its state
// (GET /master/state), for the mesosschema plugin that polls it.
//
// The leader is looked for, in order, where ZooKeeper says it is (when a zk://
// URL is configured: the masters' election group), where it was last found,
// then at each configured master. A master that does not lead redirects to the
// leader (followed here, keeping the credentials) or answers 503 while no
// leader is elected (the next candidate is tried). The caller's check of each
// body names the leader the state knows, so that a state served by a master
// that does not lead and does not redirect (Mesos before 1.0) is refetched
// from the leader instead of being taken for the cluster's.
package mesosmaster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Defaults of the Config fields left zero.
const (
	// DefaultTimeout bounds one GET of the state. A large cluster's state is
	// tens of megabytes that the master renders before the first byte.
	DefaultTimeout = 30 * time.Second
	// DefaultZKTimeout is how long the first Fetch waits for ZooKeeper to
	// name a leader before it tries the configured masters (Mesos-DNS's
	// zkDetectionTimeout default).
	DefaultZKTimeout = 30 * time.Second
	// DefaultMaxBodySize bounds a state body: ten times the largest states
	// seen in practice, and still a bound on what a broken master can make
	// us hold.
	DefaultMaxBodySize = 256 << 20
)

// Config is what the client needs to reach the masters.
type Config struct {
	// Masters are the masters' "host:port", tried in this order after the
	// ZooKeeper leader and the leader last found.
	Masters []string
	// ZK is "zk://[user:pass@]host1:port1[,host2:port2...]/path", the
	// ZooKeeper ensemble and znode where the masters hold their election
	// (Mesos's --zk). Optional; user:pass is used as digest credentials.
	ZK string
	// Timeout bounds each GET, body included, and the IAM login.
	// Default DefaultTimeout.
	Timeout time.Duration
	// ZKTimeout is how long, after Start, a Fetch waits for ZooKeeper to
	// name the leader before it goes on with the other candidates.
	// Default DefaultZKTimeout.
	ZKTimeout time.Duration
	// Scheme is "http" (the default) or "https".
	Scheme string
	// CAFile is a PEM file of the CAs to trust, instead of the system's,
	// for the masters and the IAM login endpoint.
	CAFile string
	// InsecureSkipVerify turns off the check of the servers' certificates.
	InsecureSkipVerify bool
	// Auth is how requests authenticate; the zero value sends none.
	Auth Auth
	// MaxBodySize bounds a state body in bytes, after decompression.
	// Default DefaultMaxBodySize.
	MaxBodySize int64
	// InsecureCredentials allows credentials (basic auth, an IAM login and
	// its token) over plain http, where anyone on the path reads them.
	// Without it, Validate refuses credentials unless Scheme is https.
	InsecureCredentials bool
	// OnRedirectRefused, when set, is called each time a redirect (or a
	// state's leader) names a host that is not a known master, and is
	// not followed: for a metric.
	OnRedirectRefused func()
}

// Auth is at most one way of authenticating to the masters.
type Auth struct {
	Basic *BasicAuth
	IAM   *IAMAuth
}

// BasicAuth sends HTTP basic credentials (a Mesos principal and its secret).
type BasicAuth struct {
	Principal string
	Secret    string
}

// IAMAuth logs in to DC/OS's IAM with a service account and sends the token
// it gives ("Authorization: token=...").
type IAMAuth struct {
	// ConfigFile is a JSON file {"uid": ..., "private_key": PEM,
	// "login_endpoint": URL}; Mesos-DNS's name "secret" for the key is
	// accepted too.
	ConfigFile string
}

// zkURL is a parsed Config.ZK.
type zkURL struct {
	servers []string // host:port of each ensemble member
	path    string   // the election group's znode, without a trailing slash
	auth    string   // "user:pass" for the digest scheme, or ""
}

// Validate reports what is wrong with c, every problem at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Masters) == 0 && c.ZK == "" {
		errs = append(errs, errors.New("no masters and no zk: one of them is needed to find the leader"))
	}
	for _, m := range c.Masters {
		if err := checkHostPort(m); err != nil {
			errs = append(errs, fmt.Errorf("master %q: %w", m, err))
		}
	}
	if c.ZK != "" {
		if _, err := parseZK(c.ZK); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Scheme != "" && c.Scheme != "http" && c.Scheme != "https" {
		errs = append(errs, fmt.Errorf("scheme %q: want http or https", c.Scheme))
	}
	if c.Timeout < 0 || c.ZKTimeout < 0 || c.MaxBodySize < 0 {
		errs = append(errs, errors.New("timeouts and the body size limit cannot be negative"))
	}
	errs = append(errs, c.Auth.validate())
	if c.Auth.Basic != nil || c.Auth.IAM != nil {
		errs = append(errs, c.checkCredentialsScheme())
	}
	return errors.Join(errs...)
}

// checkCredentialsScheme refuses credentials over plain http unless
// InsecureCredentials allows them.
func (c Config) checkCredentialsScheme() error {
	if c.Scheme == "https" || c.InsecureCredentials {
		return nil
	}
	return fmt.Errorf("%w: the masters are asked over plain http, where the credentials travel in clear", ErrInsecureCredentials)
}

// validate checks that at most one method is set, and set fully.
func (a Auth) validate() error {
	switch {
	case a.Basic != nil && a.IAM != nil:
		return errors.New("auth: basic and iam are exclusive")
	case a.Basic != nil && a.Basic.Principal == "":
		return errors.New("auth basic: no principal")
	case a.IAM != nil && a.IAM.ConfigFile == "":
		return errors.New("auth iam: no config file")
	}
	return nil
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Scheme == "" {
		c.Scheme = "http"
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ZKTimeout == 0 {
		c.ZKTimeout = DefaultZKTimeout
	}
	if c.MaxBodySize == 0 {
		c.MaxBodySize = DefaultMaxBodySize
	}
	return c
}

// checkHostPort accepts "host:port" with a numeric port.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("no host")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// defaultZKPort is ZooKeeper's client port, for servers given without one.
const defaultZKPort = "2181"

// parseZK parses "zk://[user:pass@]host:port[,host:port...]/path". The
// comma-separated host list is not a URL authority net/url would accept.
func parseZK(s string) (zkURL, error) {
	rest, ok := strings.CutPrefix(s, "zk://")
	if !ok {
		return zkURL{}, fmt.Errorf("zk %q: want zk://host:port[,host:port...]/path", RedactZK(s))
	}
	hosts, path, ok := strings.Cut(rest, "/")
	path = strings.TrimRight(path, "/")
	if !ok || path == "" {
		return zkURL{}, fmt.Errorf("zk %q: no znode path after the hosts", RedactZK(s))
	}
	var u zkURL
	if i := strings.LastIndexByte(hosts, '@'); i >= 0 {
		u.auth, hosts = hosts[:i], hosts[i+1:]
		if !strings.Contains(u.auth, ":") {
			return zkURL{}, fmt.Errorf("zk %q: credentials must be user:pass", RedactZK(s))
		}
	}
	u.path = "/" + path
	for h := range strings.SplitSeq(hosts, ",") {
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), defaultZKPort)
		}
		if err := checkHostPort(h); err != nil {
			return zkURL{}, fmt.Errorf("zk %q: server %q: %w", RedactZK(s), h, err)
		}
		u.servers = append(u.servers, h)
	}
	return u, nil
}

// RedactZK hides the credentials of a zk:// URL, for messages and the
// HTTP interface's /v1/config. Everything up to the last "@" goes: a
// password may hold a "/" or an "@" itself.
func RedactZK(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "", s
	} else {
		scheme += "://"
	}
	i := strings.LastIndexByte(rest, '@')
	if i < 0 {
		return s
	}
	return scheme + "xxxxx@" + rest[i+1:]
}
