package mesosmaster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

const (
	// statePath is the master's state endpoint (Mesos 0.25 and later; the
	// older /master/state.json is an alias of it).
	statePath = "/master/state"
	userAgent = "schemadns-mesosschema"
	// maxHops bounds the requests that follow the first one for a
	// candidate: redirects, and the one refetch from the leader a state
	// names. Masters point at the leader directly; a longer chain is an
	// election under way.
	maxHops = 2
	// drainSize is how much of an unread body is discarded so that its
	// connection can be reused; past it the connection is dropped.
	drainSize = 64 << 10
)

// fetchFrom fetches the state starting at master: it follows redirects
// (net/http would drop the Authorization header on a redirect to another
// host) and refetches from the leader once when check says the state came
// from a master that does not lead. A master that failed (recorded in
// failed, by host:port) is not asked again.
func (c *Client) fetchFrom(ctx context.Context, master string, check CheckFunc, failed map[string]bool) (Result, error) {
	target := &url.URL{Scheme: c.cfg.Scheme, Host: master, Path: statePath}
	askedLeader := false
	for hop := 0; ; hop++ {
		if hop > 0 && failed[target.Host] {
			return Result{}, fmt.Errorf("%w: %s, which failed already", ErrAskedBefore, target.Host)
		}
		next, err := c.getState(ctx, target)
		if err != nil {
			failed[target.Host] = true
			return Result{}, err
		}
		if next != nil {
			if hop == maxHops {
				return Result{}, fmt.Errorf("%w: the last to %s", ErrTooManyRedirects, next.Redacted())
			}
			if err := c.checkKnown(ctx, next); err != nil {
				return Result{}, fmt.Errorf("GET %s: %w", target.Redacted(), err)
			}
			target = next
			continue
		}
		served := hostPort(target)
		digest := c.wire.sum(c.seed)
		if d, ok := c.accepted[served]; ok && d == digest {
			return Result{Master: served, Unchanged: true}, nil
		}
		body, err := c.wire.body(c.encoding, c.cfg.MaxBodySize)
		if err != nil {
			failed[target.Host] = true
			return Result{}, fmt.Errorf("state from %s: %w", served, err)
		}
		leader, err := check(body, served)
		if err != nil {
			failed[target.Host] = true
			return Result{}, fmt.Errorf("state from %s: %w", served, err)
		}
		leader = leaderHostPort(leader)
		if leader == "" || c.sameMaster(ctx, served, leader) {
			c.accepted[served] = digest
			return Result{Master: served}, nil
		}
		if askedLeader || hop == maxHops {
			return Result{}, fmt.Errorf("%w: %s names %s as the leader", ErrNotLeader, served, leader)
		}
		askedLeader = true
		next = &url.URL{Scheme: target.Scheme, Host: leader, Path: target.Path}
		if err := c.checkKnown(ctx, next); err != nil {
			return Result{}, fmt.Errorf("state from %s names the leader %s: %w", served, leader, err)
		}
		target = next
	}
}

// checkKnown refuses a redirect (or a state's leader) to a host that is
// neither a configured master nor the leader ZooKeeper names: a master
// that is not what it seems, or a rewritten answer, must not collect the
// credentials, nor steer the client to any host it likes.
func (c *Client) checkKnown(ctx context.Context, to *url.URL) error {
	hp := hostPort(to)
	known := c.cfg.Masters
	if leader, ok := c.Leader(); ok {
		known = append(slices.Clip(known), leader)
	}
	for _, m := range known {
		if c.sameMaster(ctx, m, hp) {
			return nil
		}
	}
	if c.cfg.OnRedirectRefused != nil {
		c.cfg.OnRedirectRefused()
	}
	return fmt.Errorf("%w: %s", ErrRedirectRefused, to.Redacted())
}

// getState makes one GET of target within Config.Timeout. On a 200 the body
// is in c.buf; on a redirect it returns where to. A 401 is retried once if
// the authorizer can get other credentials.
func (c *Client) getState(ctx context.Context, target *url.URL) (*url.URL, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	next, err := c.get(ctx, target)
	var refused *refusedError
	if errors.As(err, &refused) && c.auth != nil && c.auth.refused(refused.header) {
		next, err = c.get(ctx, target)
	}
	return next, err
}

// refusedError is a 401 to the Authorization header it carries.
type refusedError struct{ header, message string }

func (e *refusedError) Error() string { return fmt.Sprintf("%v: %s", ErrUnauthorized, e.message) }
func (e *refusedError) Unwrap() error { return ErrUnauthorized }

// get makes one request and sorts its answer.
func (c *Client) get(ctx context.Context, target *url.URL) (*url.URL, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	// Asked for here, the transport leaves the body compressed: an
	// unchanged state is recognised by its compressed bytes (decoded
	// only when new).
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", userAgent)
	var authz string
	if c.auth != nil {
		if authz, err = c.auth.header(ctx); err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", authz)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer drainAndClose(resp.Body)
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
		return nil, c.readBody(resp)
	case code >= 300 && code < 400:
		return redirectTarget(target, resp)
	case code == http.StatusServiceUnavailable:
		return nil, fmt.Errorf("GET %s: %w: %s", target.Redacted(), ErrNoLeader, snippet(resp.Body))
	case code == http.StatusUnauthorized:
		return nil, &refusedError{header: authz, message: fmt.Sprintf("GET %s: %s", target.Redacted(), snippet(resp.Body))}
	default:
		return nil, fmt.Errorf("GET %s: %s: %s", target.Redacted(), resp.Status, snippet(resp.Body))
	}
}

// redirectTarget resolves a redirect's Location against the request's URL:
// Mesos sends a scheme-relative "//leader:5050/master/state". A switch from
// https to http is refused, since the credentials would follow in clear.
func redirectTarget(from *url.URL, resp *http.Response) (*url.URL, error) {
	raw := resp.Header.Get("Location")
	if raw == "" {
		return nil, fmt.Errorf("GET %s: %s without a Location", from.Redacted(), resp.Status)
	}
	to, err := from.Parse(raw)
	if err != nil {
		// The parse error quotes the Location, which may hold userinfo.
		return nil, fmt.Errorf("GET %s: %s to an unparseable Location", from.Redacted(), resp.Status)
	}
	// Messages quote the Location without its userinfo's password, and
	// userinfo is never followed: net/http would send it as credentials.
	loc := to.Redacted()
	to.User = nil
	switch {
	case to.Scheme != "http" && to.Scheme != "https":
		return nil, fmt.Errorf("GET %s: redirect to %q: not http(s)", from.Redacted(), loc)
	case from.Scheme == "https" && to.Scheme == "http":
		return nil, fmt.Errorf("GET %s: redirect to %q: refused, it leaves https", from.Redacted(), loc)
	case to.Host == "":
		return nil, fmt.Errorf("GET %s: redirect to %q: no host", from.Redacted(), loc)
	}
	return to, nil
}

// readBody reads resp's body as it came into c.wire, reusing its room.
// It fails past Config.MaxBodySize; the Content-Length, when sent, is
// checked first.
func (c *Client) readBody(resp *http.Response) error {
	limit := c.cfg.MaxBodySize
	if resp.ContentLength > limit {
		return fmt.Errorf("%w: Content-Length %d, the limit is %d bytes", ErrBodyTooLarge, resp.ContentLength, limit)
	}
	c.encoding = strings.ToLower(resp.Header.Get("Content-Encoding"))
	if c.encoding != "" && c.encoding != "gzip" && c.encoding != "identity" {
		return fmt.Errorf("state in the unknown encoding %q", c.encoding)
	}
	return c.wire.readFrom(resp.Body, limit, resp.ContentLength)
}

// drainAndClose discards what is left of a small body, so that its
// connection can serve the next request, and closes it.
func drainAndClose(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, drainSize)
	_ = body.Close()
}

// hostPort is u's host:port, with the scheme's port when u has none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// leaderHostPort drops the "master@" of a libprocess PID.
func leaderHostPort(leader string) string {
	if _, after, ok := strings.Cut(leader, "@"); ok {
		return after
	}
	return leader
}

// sameMaster reports whether the master that served a state is the leader
// that the state names. They are often named differently: the configured or
// redirected-to master by hostname, the state's leader by IP.
func (c *Client) sameMaster(ctx context.Context, served, leader string) bool {
	if served == leader {
		return true
	}
	sHost, sPort, err1 := net.SplitHostPort(served)
	lHost, lPort, err2 := net.SplitHostPort(leader)
	if err1 != nil || err2 != nil || sPort != lPort {
		return false
	}
	sIP, lIP := net.ParseIP(sHost), net.ParseIP(lHost)
	switch {
	case strings.EqualFold(sHost, lHost):
		return true
	case sIP != nil && lIP != nil:
		return sIP.Equal(lIP)
	case sIP == nil && lIP != nil:
		return c.resolvesTo(ctx, sHost, lIP)
	case sIP != nil && lIP == nil:
		return c.resolvesTo(ctx, lHost, sIP)
	}
	return false
}

// resolvesTo reports whether host has ip among its addresses; a failed
// lookup says no, which costs one more fetch, from the leader by its IP.
func (c *Client) resolvesTo(ctx context.Context, host string, ip net.IP) bool {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(ips, ip.Equal)
}
