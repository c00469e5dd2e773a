// Package gensearchpath is the node side of KEP-2009 autopath, for a
// node-local cache or a pod's sidecar: a query for
// <base>.search.<ns>.<cluster>.<autopath> is sent to the cluster DNS as
// <base> with the SearchPaths EDNS0 option carrying the schema v1 search
// paths of <ns> and the host's search domains, and the answer comes back to
// the client under its own name, behind a CNAME to the name found.
package gensearchpath

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"
	"github.com/coredns/coredns/plugin/pkg/proxy"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/searchpath"
)

// Upstream behaviour, as in CoreDNS's forward plugin.
const (
	defaultMaxFails = 2                      // failed health checks before an upstream is down
	hcInterval      = 500 * time.Millisecond // between health checks of a failing upstream
	readTimeout     = 2 * time.Second        // for one reply
	connExpire      = 10 * time.Second       // idle upstream connections are closed after this
	// upstreamUDPSize is the EDNS0 buffer size offered to the cluster DNS
	// (the DNS flag day 2020 value); larger replies are fetched over TCP.
	upstreamUDPSize = 1232
	// connectTries bounds the attempts on one upstream: a stale cached
	// connection and a retry over TCP after truncation.
	connectTries = 3
	// maxClosedCached bounds the cached connections found closed that
	// one query goes through before a fresh one: a replica that exits
	// closes every connection of the pool at once, and as forward does,
	// they do not count as tries (the query got no reply on them).
	maxClosedCached = 64
)

var errMismatch = errors.New("gensearchpath: the reply does not match the query")

// Gensearchpath is the plugin: configuration is fixed at setup.
type Gensearchpath struct {
	Next plugin.Handler

	form searchpath.Form // the search.<ns>.<cluster>.<autopath> names
	host []string        // host-level search domains, after the cluster's
	code uint16          // the SearchPaths option code
	fall bool            // pass the base name down the chain when all paths are NXDOMAIN

	proxies  []*proxy.Proxy // the cluster DNS
	forceTCP bool           // ask the cluster DNS over TCP only
	maxfails uint32         // health-check failures before a proxy counts as down
	turn     atomic.Uint32  // round robin over proxies
}

// Name implements plugin.Handler.
func (g *Gensearchpath) Name() string { return pluginName }

// ServeDNS implements plugin.Handler.
func (g *Gensearchpath) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery || isTransfer(r.Question[0].Qtype) {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	n, ok := g.form.Parse(r.Question[0].Name)
	if !ok {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	server := metrics.WithServer(ctx)
	res, sent, err := g.ask(ctx, w, r, n)
	if err != nil {
		g.observe(server, outcomeError, sent)
		return dns.RcodeServerFailure, err
	}
	if res.Rcode == dns.RcodeNameError && g.fall {
		return g.passDown(ctx, w, r, n.Base, sent)
	}
	if res.Rcode == dns.RcodeFormatError || res.Rcode == dns.RcodeNotImplemented {
		// About our query, not the client's: the cluster DNS does not
		// take the option (or not these paths).
		g.observe(server, outcomeError, sent)
		return dns.RcodeServerFailure, fmt.Errorf("%s: the cluster DNS answered %s to %s with the SearchPaths option",
			pluginName, dns.RcodeToString[res.Rcode], n.Base)
	}
	g.observe(server, outcomeOf(res.Rcode), sent)
	w.WriteMsg(renamed(r, n.Base, res))
	return dns.RcodeSuccess, nil
}

// ask sends n's base name with the SearchPaths option to the cluster DNS
// and returns its reply and the number of queries sent. When no path fits
// under the base nothing can exist there: NXDOMAIN without a query.
func (g *Gensearchpath) ask(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, n searchpath.Name) (*dns.Msg, int, error) {
	value := g.option(n)
	if value == nil {
		return new(dns.Msg).SetRcode(r, dns.RcodeNameError), 0, nil
	}
	return g.exchange(ctx, w, upstreamQuery(r, n.Base, g.code, value))
}

// option is the SearchPaths value for n: the schema v1 paths of its
// namespace and the host domains, leaving out those that would make a name
// over 255 octets (as a stub resolver skips them); nil when none fit.
func (g *Gensearchpath) option(n searchpath.Name) []byte {
	paths := g.form.PathsV1(n.Namespace, g.host...)
	fit := paths[:0]
	for _, p := range paths {
		if _, err := searchpath.Join(n.Base, p); err == nil {
			fit = append(fit, p)
		}
	}
	if len(fit) == 0 {
		return nil
	}
	value, err := searchpath.Format(fit)
	if err != nil { // setup made sure the longest namespace fits
		return nil
	}
	return value
}

// passDown resolves base down the chain as an ordinary query and
// answers the client with a CNAME to it.
func (g *Gensearchpath) passDown(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, base string, sent int) (int, error) {
	server := metrics.WithServer(ctx)
	fallthroughs.WithLabelValues(server).Inc()
	sub := r.Copy()
	sub.Question[0].Name = base
	searchpath.Remove(sub, g.code)
	nw := nonwriter.New(w)
	rcode, err := plugin.NextOrFailure(g.Name(), g.Next, ctx, nw, sub)
	sent++
	if !plugin.ClientWrite(rcode) {
		g.observe(server, outcomeError, sent)
		return rcode, err
	}
	if nw.Msg == nil {
		g.observe(server, outcomeError, sent)
		return dns.RcodeServerFailure, fmt.Errorf("%s: no reply for %s from the chain", pluginName, base)
	}
	res := nw.Msg
	m := replyTo(r, res)
	if res.Rcode == dns.RcodeSuccess {
		m.Answer = make([]dns.RR, 0, len(res.Answer)+1)
		m.Answer = append(m.Answer, searchpath.CNAME(r.Question[0], base, res))
		m.Answer = append(m.Answer, res.Answer...)
	}
	g.observe(server, outcomeOf(res.Rcode), sent)
	w.WriteMsg(m)
	return rcode, err
}

func (g *Gensearchpath) observe(server, outcome string, sent int) {
	expansions.WithLabelValues(server, outcome).Inc()
	subqueries.WithLabelValues(server).Observe(float64(sent))
}

func outcomeOf(rcode int) string {
	switch rcode {
	case dns.RcodeSuccess:
		return outcomeFound
	case dns.RcodeNameError:
		return outcomeNXDOMAIN
	}
	return outcomeError
}

// upstreamQuery is the query for the cluster DNS: the base name, the
// client's type, class and flags, EDNS0 with the client's DO bit and the
// SearchPaths option.
func upstreamQuery(r *dns.Msg, base string, code uint16, value []byte) *dns.Msg {
	q := r.Question[0]
	m := new(dns.Msg)
	m.SetQuestion(base, q.Qtype)
	m.Question[0].Qclass = q.Qclass
	m.RecursionDesired = r.RecursionDesired
	m.CheckingDisabled = r.CheckingDisabled
	do := false
	if o := r.IsEdns0(); o != nil {
		do = o.Do()
	}
	m.SetEdns0(upstreamUDPSize, do)
	searchpath.Attach(m, code, value, upstreamUDPSize)
	return m
}

// renamed is the cluster DNS's reply res for base, given back under the
// client's question: records owned by base (the CNAME to the name found)
// are owned by the client's name instead. Only a NOERROR reply keeps its
// answer.
func renamed(r *dns.Msg, base string, res *dns.Msg) *dns.Msg {
	m := replyTo(r, res)
	if res.Rcode != dns.RcodeSuccess {
		return m
	}
	m.Answer = make([]dns.RR, len(res.Answer))
	for i, rr := range res.Answer {
		if strings.EqualFold(rr.Header().Name, base) {
			rr = dns.Copy(rr)
			rr.Header().Name = r.Question[0].Name
		}
		m.Answer[i] = rr
	}
	return m
}

// replyTo starts the client's reply from res: the client's question and
// id, res's rcode, flags, authority and additional records, without res's
// OPT (the server adds the client's; the option is never echoed).
func replyTo(r, res *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Rcode = res.Rcode
	m.Authoritative = res.Authoritative
	m.RecursionAvailable = res.RecursionAvailable
	m.Ns = res.Ns
	m.Extra = searchpath.WithoutOPT(res.Extra)
	return m
}

// exchange sends m to the cluster DNS: upstreams in round robin, healthy
// ones first; over UDP, and again over TCP when the reply is truncated (or
// over TCP only, with force_tcp); on
// an error the next upstream, and a health check of the one that failed. It
// returns the reply and the number of queries sent.
func (g *Gensearchpath) exchange(ctx context.Context, w dns.ResponseWriter, m *dns.Msg) (*dns.Msg, int, error) {
	state := request.Request{W: w, Req: m}
	sent := 0
	err := error(proxy.ErrNoHealthy)
	for _, p := range g.list() {
		if ctx.Err() != nil {
			return nil, sent, ctx.Err()
		}
		var ret *dns.Msg
		opts := proxy.Options{PreferUDP: !g.forceTCP, ForceTCP: g.forceTCP}
		for tries, closed := 0, 0; tries < connectTries; {
			ret, _, _, err = p.Connect(ctx, state, opts)
			if errors.Is(err, proxy.ErrCachedClosed) && closed < maxClosedCached && ctx.Err() == nil {
				closed++ // not answered on a closed connection; the next Connect takes another
				continue
			}
			tries++
			sent++
			if err == nil && ret.Truncated && !opts.ForceTCP {
				opts.ForceTCP = true
				continue
			}
			break
		}
		if err == nil && !state.Match(ret) {
			err = errMismatch
		}
		if err == nil {
			return ret, sent, nil
		}
		p.Healthcheck()
	}
	return nil, sent, fmt.Errorf("%s: cluster DNS: %w", pluginName, err)
}

// list is the order to try the upstreams in: round robin, those the
// health checks mark down last (all are tried when all are down).
func (g *Gensearchpath) list() []*proxy.Proxy {
	n := len(g.proxies)
	start := int(g.turn.Add(1)) % n
	out := make([]*proxy.Proxy, 0, n)
	for _, up := range []bool{true, false} {
		for i := 0; i < n; i++ {
			p := g.proxies[(start+i)%n]
			if !p.Down(g.maxfails) == up {
				out = append(out, p)
			}
		}
	}
	return out
}

func isTransfer(qtype uint16) bool { return qtype == dns.TypeAXFR || qtype == dns.TypeIXFR }
