package mesosmaster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

var log = clog.NewWithPlugin("mesosschema")

// Client finds the leading master and fetches its state. Fetch calls are
// serialised: they share one body buffer.
type Client struct {
	cfg       Config
	http      *http.Client    // never follows redirects: fetchFrom does
	transport *http.Transport // its idle connections are closed by Stop
	auth      authorizer      // nil: no Authorization header
	zk        *detector       // nil without Config.ZK

	mu sync.Mutex // serialises Fetch, which owns what follows
	// wire holds a response's bytes as they came, gzipped when the master
	// compressed them (a tenth of the state): kept between polls, and
	// hashed so that a state the caller accepted last is neither
	// decompressed nor checked again. The check reads the state out of
	// it, decompressing as it goes.
	wire wireBuf
	// encoding is wire's Content-Encoding ("" or "gzip").
	encoding string
	// seed hashes wire; accepted is the hash of the last state check
	// accepted, by the master that served it.
	seed       maphash.Seed
	accepted   map[string]uint64
	lastLeader string // the master that served the last state

	stopped atomic.Bool
}

// Result is where a state came from.
type Result struct {
	// Unchanged: the master served the same bytes as the state the last
	// check accepted from it, so the state was neither decompressed nor
	// checked again.
	Unchanged bool
	// Master is the host:port that served the state: the leader as far as
	// the caller's check could tell.
	Master string
	// Failures are the errors of the candidates tried before Master, joined;
	// nil when the first candidate answered.
	Failures error
}

// CheckFunc decodes a state served by master, read from body as it is
// decompressed (a state is tens of megabytes: it is never held whole,
// decompressed, by the client), and returns the leader that the state
// names, as host:port ("master@" before it is accepted), or "" when it
// names none. An error rejects the state: the next candidate is tried.
// body is valid only during the call; a read past Config.MaxBodySize
// fails with ErrBodyTooLarge.
type CheckFunc func(body io.Reader, master string) (leader string, err error)

// New checks cfg, loads its CA and IAM files and returns a client that has
// contacted nothing yet.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tlsConf, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		// Masters are reached directly: an environment's proxy is for the
		// outside world, not for the cluster's control plane.
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: cfg.Timeout,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
	}
	c := &Client{
		cfg:       cfg,
		seed:      maphash.MakeSeed(),
		accepted:  map[string]uint64{},
		transport: transport,
		http: &http.Client{
			Transport:     transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	// The login follows no redirect either: the signed assertion would
	// go wherever a Location says.
	login := &http.Client{Transport: transport, CheckRedirect: c.http.CheckRedirect}
	if c.auth, err = newAuthorizer(cfg, login); err != nil {
		return nil, err
	}
	if cfg.ZK != "" {
		u, err := parseZK(cfg.ZK)
		if err != nil {
			return nil, err
		}
		c.zk = newDetector(u, cfg.ZKTimeout)
	}
	return c, nil
}

// newAuthorizer returns the authorizer cfg.Auth asks for, nil for none.
func newAuthorizer(cfg Config, login *http.Client) (authorizer, error) {
	switch {
	case cfg.Auth.Basic != nil:
		return newBasicAuth(cfg.Auth.Basic), nil
	case cfg.Auth.IAM != nil:
		return loadIAM(cfg.Auth.IAM.ConfigFile, login, cfg.Timeout, cfg.InsecureCredentials)
	}
	return nil, nil
}

// tlsConfig trusts cfg.CAFile's CAs when it is set, the system's otherwise.
func tlsConfig(cfg Config) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify}
	if cfg.CAFile == "" {
		return conf, nil
	}
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("ca file: %w", err)
	}
	conf.RootCAs = x509.NewCertPool()
	if !conf.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca file %s: no PEM certificate in it", cfg.CAFile)
	}
	return conf, nil
}

// MaxBodySize is the limit on a state body in effect, in bytes.
func (c *Client) MaxBodySize() int64 { return c.cfg.MaxBodySize }

// Start starts following the ZooKeeper election, when Config.ZK is set;
// it returns at once. Fetch works without Start, on the other candidates.
func (c *Client) Start() error {
	if c.zk == nil {
		return nil
	}
	return c.zk.start()
}

// Stop ends the ZooKeeper session and closes idle connections; no goroutine
// of the client is left once it returns. It does not interrupt a Fetch under
// way (cancel its context for that); Fetch fails after Stop.
func (c *Client) Stop() {
	if c.stopped.Swap(true) {
		return
	}
	if c.zk != nil {
		c.zk.stop()
	}
	c.transport.CloseIdleConnections()
}

// Leader returns the leader that ZooKeeper names, or the last one it named
// while it is unreachable; false without one.
func (c *Client) Leader() (string, bool) {
	if c.zk == nil {
		return "", false
	}
	return c.zk.leader()
}

// LeaderChanged receives a value after ZooKeeper names another leader (or
// none), so that a poller can fetch at once. One value stands for any number
// of changes since the last receive. Nil (never ready) without Config.ZK.
func (c *Client) LeaderChanged() <-chan struct{} {
	if c.zk == nil {
		return nil
	}
	return c.zk.changed
}

// ZKConnected reports whether the ZooKeeper session is up; false without
// Config.ZK.
func (c *Client) ZKConnected() bool {
	return c.zk != nil && c.zk.connected.Load()
}

// Fetch returns the leading master's state, trying in order the leader
// ZooKeeper names, the master that served the last state, then
// Config.Masters. check decodes each body and names its leader (see
// CheckFunc). When every candidate fails, the error lists each one's
// failure. A failed IAM login
// (ErrLogin) ends the Fetch at once, since every master needs its token.
func (c *Client) Fetch(ctx context.Context, check CheckFunc) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped.Load() {
		return Result{}, ErrStopped
	}
	candidates := c.candidates(ctx)
	if len(candidates) == 0 {
		return Result{}, ErrNoCandidates
	}
	var failures []error
	// failed are the masters this Fetch asked in vain: a redirect or a
	// state's leader that names one is not asked again (a slow leader
	// would cost another Timeout).
	failed := map[string]bool{}
	for _, master := range candidates {
		if err := ctx.Err(); err != nil {
			failures = append(failures, err)
			break
		}
		if failed[master] {
			continue
		}
		res, err := c.fetchFrom(ctx, master, check, failed)
		if err == nil {
			c.lastLeader = res.Master
			res.Failures = errors.Join(failures...)
			return res, nil
		}
		failures = append(failures, fmt.Errorf("master %s: %w", master, err))
		if errors.Is(err, ErrLogin) {
			break // every master needs the token
		}
	}
	return Result{}, fmt.Errorf("no master served a state: %w", errors.Join(failures...))
}

// candidates lists the masters to try, best first, each once. While
// ZooKeeper has not answered since Start, it waits for it up to ZKTimeout.
func (c *Client) candidates(ctx context.Context) []string {
	var list []string
	add := func(m string) {
		if m != "" && !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	if c.zk != nil {
		c.zk.awaitFirstAnswer(ctx)
		leader, _ := c.zk.leader()
		add(leader)
	}
	add(c.lastLeader)
	for _, m := range c.cfg.Masters {
		add(m)
	}
	return list
}
