// Package compress makes a server block compress the replies that need it
// (see Install).
package compress

import (
	"context"
	"net"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// Name compression (RFC 1035 4.1.4) of replies over TCP. CoreDNS's server
// wraps every reply writer in a request.ScrubWriter, whose Truncate turns
// compression off whenever the uncompressed reply fits the client's
// buffer: always over TCP (64 KiB). A 1000-endpoint answer then repeats
// its owner name 1000 times, 43 KB where 16 KB would do. The schema
// plugins put compressFirst at the head of their server block's chain: for
// a query over TCP it swaps the ScrubWriter for one that scrubs the same
// way and then compresses any reply of several records, whichever plugin
// wrote it (cache hits included). Over UDP the ScrubWriter stays: a reply
// that fits the client's buffer goes as it is (compressing it would cost
// CPU on every query and save nothing the client needs), and one that does
// not is compressed by Truncate before anything is cut.

// compressMinRecords is the record count from which a reply is
// compressed: below it the saving is a few bytes and the compression map
// costs more than it saves.
const compressMinRecords = 4

// Install makes the server block of cfg compress its replies.
// Installing it twice (two plugins of one block) is harmless: the second
// finds the writer already swapped.
func Install(cfg *dnsserver.Config) {
	first := func(next plugin.Handler) plugin.Handler { return compressFirst{next: next} }
	cfg.Plugin = append([]plugin.Plugin{first}, cfg.Plugin...)
}

// compressFirst is the chain's first handler.
type compressFirst struct{ next plugin.Handler }

func (c compressFirst) Name() string { return "schemadns_compress" }

func (c compressFirst) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if c.next == nil {
		return plugin.NextOrFailure(c.Name(), nil, ctx, w, r)
	}
	if sw, ok := w.(*request.ScrubWriter); ok {
		if _, tcp := w.RemoteAddr().(*net.TCPAddr); tcp {
			w = &compressWriter{ResponseWriter: sw.ResponseWriter, req: r}
		}
	}
	// Called directly, not through plugin.NextOrFailure: its tracing
	// frame would deepen the stack of every query (a UDP query runs on a
	// fresh goroutine, whose small stack is copied each time it doubles), and
	// this handler is no step worth a span of its own.
	return c.next.ServeDNS(ctx, w, r)
}

// compressWriter is a ScrubWriter that compresses replies of several
// records after fitting them to the client's buffer.
type compressWriter struct {
	dns.ResponseWriter
	req *dns.Msg
}

func (c *compressWriter) WriteMsg(m *dns.Msg) error {
	state := request.Request{Req: c.req, W: c.ResponseWriter}
	state.SizeAndDo(m)
	state.Scrub(m)
	if len(m.Answer)+len(m.Ns)+len(m.Extra) >= compressMinRecords {
		m.Compress = true
	}
	return c.ResponseWriter.WriteMsg(m)
}
