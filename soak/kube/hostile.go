package kube

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/soak/server"
)

// The hostile input: mutated and malformed DNS messages, over UDP and TCP,
// to every server port (ours' cluster block, ours' edns0autopath block,
// stock), in batches; after each batch the liveness probes must pass.

// hostileBatch is the number of messages between two liveness probes.
const hostileBatch = 1000

// searchPathsCode is edns0autopath's default SearchPaths option code.
const searchPathsCode = 65534

// HostileResult is the outcome for one port.
type HostileResult struct {
	Port          string // which server block
	Sent, UDP     int
	TCP, TCPConns int
	Replies       int64 // answers read back (any rcode)
	Batches       int
	ProbeFailures int // batches after which a liveness probe failed
	Crashes       int // the process exited
	Panics        int // panics the server logged (recovered)
	Seconds       float64
	Rate          float64 // messages per second
	Kinds         map[string]int
	FirstFailure  string
}

// target is one port under attack and the probes that show it alive.
type hostileTarget struct {
	name   string
	s      *server.Server
	addr   string
	probes []server.Liveness
}

func runHostile(ctx context.Context, e *env) ([]*HostileResult, error) {
	var targets []hostileTarget
	for _, s := range e.servers {
		ps := e.probes(s)
		targets = append(targets, hostileTarget{name: s.Key + " cluster.local block", s: s, addr: s.Addr(), probes: ps[:1]})
		if s.Key == KeyOurs {
			targets = append(targets, hostileTarget{name: "ours edns0autopath block", s: s, addr: s.APAddr(), probes: ps[1:2]})
		}
	}
	var out []*HostileResult
	var failed []string
	for i, t := range targets {
		panics := t.s.Panics()
		r := e.attack(ctx, t, rand.New(rand.NewPCG(uint64(i), 2009)))
		r.Panics = t.s.Panics() - panics
		out = append(out, r)
		logf("hostile %s: %d messages at %.0f/s, %d probe failures, %d crashes, %d panics", t.name, r.Sent, r.Rate, r.ProbeFailures, r.Crashes, r.Panics)
		if r.ProbeFailures+r.Crashes+r.Panics > 0 {
			failed = append(failed, t.name)
		}
	}
	if len(failed) > 0 {
		return out, fmt.Errorf("failures on %s", strings.Join(failed, ", "))
	}
	return out, ctx.Err()
}

// attack sends e.cfg.Hostile messages to t in batches, three in ten over
// TCP, and probes after each batch.
func (e *env) attack(ctx context.Context, t hostileTarget, r *rand.Rand) *HostileResult {
	res := &HostileResult{Port: t.name, Kinds: map[string]int{}}
	udp, err := net.Dial("udp", t.addr)
	if err != nil {
		res.FirstFailure = err.Error()
		return res
	}
	defer udp.Close()
	var replies atomic.Int64
	go drain(udp, &replies)
	start := time.Now()
	for res.Sent < e.cfg.Hostile && ctx.Err() == nil {
		n := min(hostileBatch, e.cfg.Hostile-res.Sent)
		e.batch(t, r, n, udp, res, &replies)
		res.Batches++
		if !t.s.Alive() {
			res.Crashes++
			res.FirstFailure = "the server exited; see " + t.s.LogPath
			break
		}
		for _, p := range t.probes {
			for _, network := range []string{"udp", "tcp"} {
				if err := server.Probe(p, network); err != nil {
					res.ProbeFailures++
					if res.FirstFailure == "" {
						res.FirstFailure = err.Error()
					}
				}
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.Rate = float64(res.Sent) / res.Seconds
	res.Replies = replies.Load()
	return res
}

// drain reads the replies to the UDP messages until the socket closes.
func drain(c net.Conn, n *atomic.Int64) {
	buf := make([]byte, 65535)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			if strings.Contains(err.Error(), "refused") {
				continue
			}
			return
		}
		n.Add(1)
	}
}

// batch sends n messages: UDP datagrams one after the other, TCP ones on
// connections of up to ten messages (a lying length prefix ends its
// connection), with a few slow writers alongside.
func (e *env) batch(t hostileTarget, r *rand.Rand, n int, udp net.Conn, res *HostileResult, replies *atomic.Int64) {
	var wg sync.WaitGroup
	for range 3 {
		msg, _ := hostileMessage(r)
		wg.Go(func() { slowWrite(t.addr, msg) })
		res.TCP++
		res.Sent++
		res.Kinds["tcp slow writer"]++
		n--
	}
	var tcpMsgs [][]byte
	for range n {
		msg, kind := hostileMessage(r)
		res.Kinds[kind]++
		res.Sent++
		if r.IntN(10) < 3 {
			tcpMsgs = append(tcpMsgs, msg)
			continue
		}
		res.UDP++
		udp.Write(msg)
		if res.UDP%64 == 0 {
			// A short pause now and then: the server's socket buffer
			// would otherwise drop most of a burst unread.
			time.Sleep(time.Millisecond)
		}
	}
	for len(tcpMsgs) > 0 {
		k := min(len(tcpMsgs), 1+r.IntN(10))
		kind := tcpSession(t.addr, tcpMsgs[:k], r, replies)
		res.Kinds[kind]++
		res.TCP += k
		res.TCPConns++
		tcpMsgs = tcpMsgs[k:]
	}
	wg.Wait()
}

// tcpSession sends msgs on one connection with their length prefixes; one
// session in four ends with a lying prefix (longer than what follows, then
// the connection closes; or shorter, so the rest is read as the next
// message; or zero). It reads what comes back for a moment.
func tcpSession(addr string, msgs [][]byte, r *rand.Rand, replies *atomic.Int64) string {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "tcp dial failed"
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var buf []byte
	for _, m := range msgs {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(m)))
		buf = append(buf, m...)
	}
	kind := "tcp session, true prefixes"
	if r.IntN(4) == 0 {
		last := msgs[len(msgs)-1]
		switch r.IntN(3) {
		case 0:
			kind = "tcp lying prefix: longer than the message"
			buf = binary.BigEndian.AppendUint16(buf, uint16(len(last)+1+r.IntN(60000)))
			buf = append(buf, last...)
		case 1:
			kind = "tcp lying prefix: shorter than the message"
			buf = binary.BigEndian.AppendUint16(buf, uint16(r.IntN(len(last))))
			buf = append(buf, last...)
		default:
			kind = "tcp lying prefix: zero"
			buf = append(buf, 0, 0)
		}
	}
	if _, err := c.Write(buf); err != nil {
		return kind
	}
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	in := make([]byte, 65535)
	for {
		if _, err := c.Read(in); err != nil {
			break
		}
		replies.Add(1)
	}
	return kind
}

// slowWrite sends one message a byte at a time, 20 ms apart, for at most
// 600 ms, and leaves: a slow or stuck client.
func slowWrite(addr string, msg []byte) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	b := binary.BigEndian.AppendUint16(nil, uint16(len(msg)))
	b = append(b, msg...)
	for i := 0; i < len(b) && i < 30; i++ {
		if _, err := c.Write(b[i : i+1]); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostileMessage makes one message and names its kind.
func hostileMessage(r *rand.Rand) ([]byte, string) {
	gens := []struct {
		kind string
		gen  func(*rand.Rand) []byte
	}{
		{"bit flips", bitFlips},
		{"bad counts", badCounts},
		{"compression loop", compressionLoop},
		{"truncated", truncated},
		{"SearchPaths duplicate", func(r *rand.Rand) []byte { return withOptions(r, validPaths(), validPaths()) }},
		{"SearchPaths huge", func(r *rand.Rand) []byte { return withOptions(r, hugePaths(r)) }},
		{"SearchPaths garbage", func(r *rand.Rand) []byte { return withOptions(r, garbage(r, 1+r.IntN(300))) }},
		{"odd opcode, class or type", oddQuestion},
		{"garbage", func(r *rand.Rand) []byte { return garbage(r, r.IntN(600)) }},
		{"several questions", severalQuestions},
	}
	g := gens[r.IntN(len(gens))]
	return g.gen(r), g.kind
}

// hostileNames are the query names the messages start from: the cluster's
// names, autopath's derived form, an external name.
var hostileNames = []string{
	"hl-00000.soak-000.svc.cluster.local.", "_http._tcp.svc-00001.soak-000.svc.cluster.local.",
	"imp-00000.soak-000.svc.clusterset.local.", "svc-00001.search.soak-000.cluster.local.ap.k8s.io.",
	"example.com.", "10.0.96.10.in-addr.arpa.", "cluster.local.", "x.pod.cluster.local.",
}

// validQuery is a well-formed query for a random name and type, with EDNS0
// (and a SearchPaths option) half of the time.
func validQuery(r *rand.Rand) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(hostileNames[r.IntN(len(hostileNames))], []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypePTR, dns.TypeANY}[r.IntN(5)])
	m.Id = uint16(r.Uint32())
	if r.IntN(2) == 0 {
		m.SetEdns0(uint16(512+r.IntN(4000)), r.IntN(2) == 0)
		if r.IntN(2) == 0 {
			o := m.IsEdns0()
			o.Option = append(o.Option, &dns.EDNS0_LOCAL{Code: searchPathsCode, Data: validPaths()})
		}
	}
	return m
}

func validPaths() []byte {
	return []byte("soak-000.svc.cluster.local,svc.cluster.local,cluster.local")
}

func packed(m *dns.Msg) []byte {
	b, err := m.Pack()
	if err != nil {
		return []byte{0, 0}
	}
	return b
}

func bitFlips(r *rand.Rand) []byte {
	b := packed(validQuery(r))
	for range 1 + r.IntN(8) {
		i := r.IntN(len(b))
		b[i] ^= 1 << r.IntN(8)
	}
	return b
}

// badCounts sets the section counts to values the message does not hold.
func badCounts(r *rand.Rand) []byte {
	b := packed(validQuery(r))
	for i := 4; i < 12; i += 2 {
		if r.IntN(2) == 0 {
			binary.BigEndian.PutUint16(b[i:], uint16(r.Uint32()))
		}
	}
	return b
}

// compressionLoop is a query whose name is a pointer to itself, or to a
// second pointer back to the first.
func compressionLoop(r *rand.Rand) []byte {
	b := make([]byte, 12, 32)
	binary.BigEndian.PutUint16(b, uint16(r.Uint32()))
	binary.BigEndian.PutUint16(b[4:], 1)
	if r.IntN(2) == 0 {
		b = append(b, 0xC0, 12) // the name at 12 points to 12
	} else {
		b = append(b, 1, 'a', 0xC0, 16, 0xC0, 12) // 14 → 16 → 12 → …
	}
	return append(b, 0, 1, 0, 1)
}

func truncated(r *rand.Rand) []byte {
	b := packed(validQuery(r))
	return b[:r.IntN(len(b))]
}

// withOptions is a query with the given SearchPaths options; the message
// is packed whatever they hold.
func withOptions(r *rand.Rand, values ...[]byte) []byte {
	m := new(dns.Msg)
	m.SetQuestion(hostileNames[r.IntN(len(hostileNames))], dns.TypeA)
	m.SetEdns0(4096, false)
	o := m.IsEdns0()
	for _, v := range values {
		o.Option = append(o.Option, &dns.EDNS0_LOCAL{Code: searchPathsCode, Data: v})
	}
	return packed(m)
}

// hugePaths is a SearchPaths value over the limits: many paths, long
// labels, or both (up to about 1,400 octets, to fit in a datagram).
func hugePaths(r *rand.Rand) []byte {
	var b strings.Builder
	for b.Len() < 520+r.IntN(900) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.Repeat("a", 1+r.IntN(70)))
		b.WriteString(".svc.cluster.local")
	}
	return []byte(b.String())
}

func garbage(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// oddQuestion is a well-formed message with an unusual opcode, class or
// type, or the QR bit set.
func oddQuestion(r *rand.Rand) []byte {
	m := validQuery(r)
	switch r.IntN(4) {
	case 0:
		m.Opcode = r.IntN(16)
	case 1:
		m.Question[0].Qclass = []uint16{dns.ClassCHAOS, dns.ClassHESIOD, dns.ClassNONE, dns.ClassANY, 0, uint16(r.Uint32())}[r.IntN(6)]
	case 2:
		m.Question[0].Qtype = []uint16{dns.TypeAXFR, dns.TypeIXFR, dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, 0, dns.TypeNone, uint16(r.Uint32())}[r.IntN(8)]
	default:
		m.Response = true
	}
	return packed(m)
}

func severalQuestions(r *rand.Rand) []byte {
	m := validQuery(r)
	for range 1 + r.IntN(3) {
		m.Question = append(m.Question, dns.Question{Name: hostileNames[r.IntN(len(hostileNames))], Qtype: dns.TypeA, Qclass: dns.ClassINET})
	}
	return packed(m)
}
