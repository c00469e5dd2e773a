// Package dnsload holds what bench/ and soak/ both need to put DNS load on
// a server and check its answers: a querier that keeps its sockets, free
// loopback ports, a pacer, and a hash of an answer's address set.
package dnsload

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Querier asks questions over one UDP socket and, when the answer is
// truncated, again over one TCP connection; each is opened again after an
// error (a late answer would otherwise be read as the next one's). It is
// for one goroutine.
type Querier struct {
	addr             string
	udp, tcp         *dns.Client
	udpConn, tcpConn *dns.Conn
}

// NewQuerier asks the server at addr (host:port).
func NewQuerier(addr string) *Querier {
	return &Querier{addr: addr, udp: &dns.Client{Net: "udp", Timeout: time.Second}, tcp: &dns.Client{Net: "tcp", Timeout: 2 * time.Second}}
}

// Ask returns the whole answer to name and qtype, and whether the UDP
// answer was truncated (and asked again over TCP).
func (q *Querier) Ask(name string, qtype uint16) (*dns.Msg, bool, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(4096, false)
	r, err := exchangeOn(q.udp, &q.udpConn, q.addr, m)
	if err != nil || !r.Truncated {
		return r, false, err
	}
	r, err = exchangeOn(q.tcp, &q.tcpConn, q.addr, m)
	return r, true, err
}

// exchangeOn sends m over *conn, dialling it first when nil, and closes it
// after an error.
func exchangeOn(c *dns.Client, conn **dns.Conn, addr string, m *dns.Msg) (*dns.Msg, error) {
	if *conn == nil {
		var err error
		if *conn, err = c.Dial(addr); err != nil {
			*conn = nil
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
	}
	m.Id = dns.Id()
	r, _, err := c.ExchangeWithConn(m, *conn)
	if err != nil {
		(*conn).Close()
		*conn = nil
	}
	return r, err
}

// Close closes the sockets.
func (q *Querier) Close() {
	for _, c := range []**dns.Conn{&q.udpConn, &q.tcpConn} {
		if *c != nil {
			(*c).Close()
			*c = nil
		}
	}
}

// FreePorts returns n distinct ports on 127.0.0.1 free for both TCP and
// UDP now (a DNS server binds both).
func FreePorts(n int) ([]int, error) {
	var out []int
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		held = append(held, u)
		out = append(out, port)
	}
	return out, nil
}

// Pace sends a token every 1/rate seconds on an absolute schedule (no
// drift) until ctx ends; a token nobody is waiting for is dropped, so the
// rate achieved is what the takers kept up with.
func Pace(ctx context.Context, tokens chan<- struct{}, rate int) {
	interval := max(time.Second/time.Duration(rate), time.Nanosecond)
	next := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for now := time.Now(); !next.After(now); next = next.Add(interval) {
			select {
			case tokens <- struct{}{}:
			default:
			}
		}
		t.Reset(time.Until(next))
	}
}

// RoundRobin runs workers, each with a Querier to addr, that together call
// ask rate times a second (Pace) until ctx ends; each call gets the next
// number of a sequence from 0, for the caller to pick its question by.
func RoundRobin(ctx context.Context, addr string, rate, workers int, ask func(q *Querier, n int)) {
	tokens := make(chan struct{}, workers)
	go Pace(ctx, tokens, rate)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			q := NewQuerier(addr)
			defer q.Close()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tokens:
				}
				ask(q, int(next.Add(1)-1))
			}
		})
	}
	wg.Wait()
}

// AddrNum is an IPv4 address as a number, NumAddr the reverse.
func AddrNum(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

// NumAddr is the IPv4 address of v, as text.
func NumAddr(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

// SetHash identifies a set of numbers (addresses, ports) whatever their
// order.
func SetHash(v []uint32) uint64 {
	s := slices.Clone(v)
	slices.Sort(s)
	h := fnv.New64a()
	var b [4]byte
	for _, a := range s {
		binary.BigEndian.PutUint32(b[:], a)
		h.Write(b[:])
	}
	return h.Sum64()
}
