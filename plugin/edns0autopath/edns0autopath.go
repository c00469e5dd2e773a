// Package edns0autopath is the cluster side of KEP-2009 autopath: it expands
// a query over the search paths of a SearchPaths EDNS0 option, or over the
// schema v1 paths of a search.<ns>.<cluster>.<autopath> name, by sending
// each candidate name through the rest of the plugin chain, and answers the
// client under its own question with a CNAME to the name that was found.
package edns0autopath

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/searchpath"
)

// Edns0autopath is the plugin: configuration is fixed at setup.
type Edns0autopath struct {
	Next plugin.Handler
	// Zones are the names expanded; others pass on untouched.
	Zones []string

	form     searchpath.Form // the search.<ns>.<cluster>.<autopath> names
	code     uint16          // the SearchPaths option code
	maxPaths int             // most paths, and most sub-queries, per query

	// formerrLog keeps FORMERR reports to one a minute: a broken client
	// would otherwise fill the log.
	formerrLog *limiter
}

// Name implements plugin.Handler.
func (a *Edns0autopath) Name() string { return pluginName }

// ServeDNS implements plugin.Handler.
func (a *Edns0autopath) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery || isTransfer(r.Question[0].Qtype) ||
		!plugin.Zones(a.Zones).Contains(r.Question[0].Name) {
		return plugin.NextOrFailure(a.Name(), a.Next, ctx, w, r)
	}
	qname := r.Question[0].Name
	value, found, err := searchpath.Find(r, a.code)
	if err != nil {
		return a.formerr(ctx, w, r, sourceOption, err)
	}
	if found {
		paths, err := searchpath.Parse(value, a.maxPaths)
		if err != nil {
			return a.formerr(ctx, w, r, sourceOption, err)
		}
		names, err := joinAll(qname, paths)
		if err != nil {
			return a.formerr(ctx, w, r, sourceOption, err)
		}
		return a.expand(ctx, w, r, names, sourceOption, -1)
	}
	if n, ok := a.form.Parse(qname); ok {
		names, err := joinAll(n.Base, a.form.PathsV1(n.Namespace))
		if err != nil {
			return a.formerr(ctx, w, r, sourceName, err)
		}
		// Last, the base name as it is, so that a pod without a node-local
		// cache still resolves external names in one query.
		absolute := len(names)
		names = append(names, n.Base)
		return a.expand(ctx, w, r, names[:min(len(names), a.maxPaths)], sourceName, absolute)
	}
	return plugin.NextOrFailure(a.Name(), a.Next, ctx, w, r)
}

// expand tries names in order through the rest of the chain: the first
// answer that is not NXDOMAIN is the reply (an error stops the search, so a
// later path can never answer for a name an earlier one shadows); when all
// are NXDOMAIN so is the reply. names[absolute] is the base name itself
// (-1: not among names), counted as a fallthrough when it is tried.
func (a *Edns0autopath) expand(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, names []string, source string, absolute int) (int, error) {
	server := metrics.WithServer(ctx)
	var last *dns.Msg
	for i, name := range names {
		if i == absolute {
			fallthroughs.WithLabelValues(server).Inc()
		}
		// A fresh copy each time: a plugin may answer with the request
		// itself, and the reply for one candidate must outlive the next.
		sub := r.Copy()
		searchpath.Remove(sub, a.code)
		sub.Question[0].Name = name
		nw := nonwriter.New(w)
		rcode, err := plugin.NextOrFailure(a.Name(), a.Next, ctx, nw, sub)
		if !plugin.ClientWrite(rcode) {
			a.observe(server, source, outcomeError, i+1)
			return rcode, err
		}
		if nw.Msg == nil {
			a.observe(server, source, outcomeError, i+1)
			return dns.RcodeServerFailure, fmt.Errorf("%s: no reply for %s from the chain", pluginName, name)
		}
		if nw.Msg.Rcode == dns.RcodeNameError {
			last = nw.Msg
			continue
		}
		outcome := outcomeFound
		if nw.Msg.Rcode != dns.RcodeSuccess {
			outcome = outcomeError
		}
		a.observe(server, source, outcome, i+1)
		w.WriteMsg(reply(r, name, nw.Msg))
		return rcode, err
	}
	a.observe(server, source, outcomeNXDOMAIN, len(names))
	w.WriteMsg(reply(r, "", last))
	return dns.RcodeNameError, nil
}

func (a *Edns0autopath) observe(server, source, outcome string, sent int) {
	expansions.WithLabelValues(server, source, outcome).Inc()
	subqueries.WithLabelValues(server, source).Observe(float64(sent))
}

// formerr answers FORMERR (the server writes it, with the client's OPT
// minus unsupported options) and logs why, at most once a minute.
func (a *Edns0autopath) formerr(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, source string, cause error) (int, error) {
	expansions.WithLabelValues(metrics.WithServer(ctx), source, outcomeFormErr).Inc()
	if ok, held := a.formerrLog.allow(time.Now()); ok {
		q := r.Question[0]
		log.Warningf("FORMERR to %s for %s %s: %v (%d more FORMERR not logged in the minute before)",
			w.RemoteAddr(), q.Name, dns.TypeToString[q.Qtype], cause, held)
	}
	return dns.RcodeFormatError, nil
}

// reply is the client's answer from res, the reply for the candidate found
// (empty when there is none): the client's question, a CNAME from it to
// found ahead of found's records, res's authority and additional records
// without its OPT (the server adds the client's, so the SearchPaths option
// is never echoed). Negative and error replies carry no answer records.
func reply(r *dns.Msg, found string, res *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Rcode = res.Rcode
	m.Authoritative = res.Authoritative
	m.RecursionAvailable = res.RecursionAvailable
	m.Truncated = res.Truncated
	if found != "" && res.Rcode == dns.RcodeSuccess {
		m.Answer = make([]dns.RR, 0, len(res.Answer)+1)
		m.Answer = append(m.Answer, searchpath.CNAME(r.Question[0], found, res))
		m.Answer = append(m.Answer, res.Answer...)
	}
	m.Ns = res.Ns
	m.Extra = searchpath.WithoutOPT(res.Extra)
	return m
}

// joinAll appends each path to base.
func joinAll(base string, paths []string) ([]string, error) {
	names := make([]string, len(paths))
	for i, p := range paths {
		name, err := searchpath.Join(base, p)
		if err != nil {
			return nil, err
		}
		names[i] = name
	}
	return names, nil
}

func isTransfer(qtype uint16) bool { return qtype == dns.TypeAXFR || qtype == dns.TypeIXFR }

// limiter lets one event a period through and counts the others.
type limiter struct {
	period time.Duration
	next   atomic.Int64 // UnixNano from when the next event may pass
	held   atomic.Int64 // events held back since the last one passed
}

func newLimiter() *limiter { return &limiter{period: time.Minute} }

// allow reports whether the event at now passes, and how many were held
// back before it.
func (l *limiter) allow(now time.Time) (bool, int64) {
	next := l.next.Load()
	if now.UnixNano() < next || !l.next.CompareAndSwap(next, now.Add(l.period).UnixNano()) {
		l.held.Add(1)
		return false, 0
	}
	return true, l.held.Swap(0)
}
