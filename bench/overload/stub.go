package main

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// stub is the upstream the servers forward external names to: it answers
// every query after a fixed delay (a slow resolver far away), or never (a
// resolver gone silent). Its answers are an A record for the name asked.
type stub struct {
	conn   *net.UDPConn
	delay  time.Duration
	silent bool
	// received and answered count queries; dropped those its own queue
	// could not hold (it holds a million).
	received, answered, dropped atomic.Int64
	queue                       chan delayed
	wg                          sync.WaitGroup
}

// delayed is an answer waiting for its time.
type delayed struct {
	due  time.Time
	to   netip.AddrPort
	wire []byte
}

// Upstream behaviours.
const (
	upstreamSlow   = "slow"   // answers after 200 ms
	upstreamSilent = "silent" // never answers
)

// slowDelay is how long the slow upstream takes.
const slowDelay = 200 * time.Millisecond

func startStub(behaviour string) (*stub, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(8 << 20)
	s := &stub{conn: conn, delay: slowDelay, silent: behaviour == upstreamSilent, queue: make(chan delayed, 1<<20)}
	s.wg.Go(s.read)
	s.wg.Go(s.write)
	return s, nil
}

func (s *stub) addr() string { return s.conn.LocalAddr().String() }

func (s *stub) close() {
	s.conn.Close()
	s.wg.Wait()
}

func (s *stub) read() {
	defer close(s.queue)
	buf := make([]byte, 4096)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		s.received.Add(1)
		if s.silent {
			continue
		}
		wire, ok := answerOf(buf[:n])
		if !ok {
			continue
		}
		select {
		case s.queue <- delayed{due: time.Now().Add(s.delay), to: from, wire: wire}:
		default:
			s.dropped.Add(1)
		}
	}
}

// write sends each answer at its time; the delay is the same for all, so
// the queue is in the order they fall due.
func (s *stub) write() {
	for d := range s.queue {
		if wait := time.Until(d.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := s.conn.WriteToUDPAddrPort(d.wire, d.to); err == nil {
			s.answered.Add(1)
		}
	}
}

// answerOf is the stub's answer to a query: its name with 192.0.2.1 (TEST-NET-1).
func answerOf(q []byte) ([]byte, bool) {
	m := new(dns.Msg)
	if err := m.Unpack(q); err != nil || len(m.Question) != 1 {
		return nil, false
	}
	r := new(dns.Msg)
	r.SetReply(m)
	r.RecursionAvailable = true
	if qq := m.Question[0]; qq.Qtype == dns.TypeA {
		r.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: qq.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
			A: net.IPv4(192, 0, 2, 1)}}
	}
	wire, err := r.Pack()
	return wire, err == nil
}
