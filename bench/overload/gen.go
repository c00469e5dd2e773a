package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/schemadns/schemadns/internal/toolflags"
)

// Traffic kinds: names inside the cluster zone, answered from memory, and
// names outside it, forwarded to the upstream.
const (
	kindCluster = iota
	kindExternal
	kinds
)

// loadSpec is one open-loop run: queries sent on a fixed schedule whatever
// the server answers, from many loopback source addresses, as the clients
// of a cluster DNS service are many pods.
type loadSpec struct {
	server   netip.AddrPort
	rate     int // queries/s offered, both kinds together
	duration time.Duration
	external float64 // the share of external names
	clients  int     // source addresses, one socket each: 127.0.1.1 …
	timeout  time.Duration
	queries  *queryPool
	// onEnd, if set, is called when the last query is sent.
	onEnd func(time.Time)
}

// loadResult is what one run saw, as a client would.
type loadResult struct {
	Offered int     // queries the schedule called for
	Sent    int     // queries the sockets took (a full send buffer refuses some)
	Seconds float64 // the load's length
	// By kind: queries sent, answered within the timeout (any rcode),
	// good answers (NOERROR, and NXDOMAIN for cluster names), and the
	// answers by rcode. Lost is sent less answered: dropped somewhere,
	// or answered after the timeout.
	Queries, Answered, Good [kinds]int
	Rcodes                  [kinds]map[string]int
	// Latency of the answered cluster queries (good ones), and of those
	// sent from settle on: past the overload's onset, whose queries wait
	// out the standing queue that clusterfirst must see before it sheds.
	latency, settled histogram
	// Slots is good answers per 100 ms by kind, from the load's start to
	// the end of the wait for the last answers.
	Slots [][kinds]int
}

// queryPool is the questions, packed: the cluster names to cycle through,
// and a template for external names made unique by a counter, so that no
// cache can answer them.
type queryPool struct {
	names      []string // the cluster names, in the order of cluster
	cluster    [][]byte
	external   []byte
	counterAt  int // offset of the 8 hex digits in external
	nextExtern atomic.Uint32
}

// slot is the timeline's resolution.
const slot = 100 * time.Millisecond

// settle is how far into the load a query must be sent to count in the
// settled latency: past clusterfirst's standing wait (100 ms) and the
// first drain of the queue that built up in it.
const settle = time.Second

// client is one source address: a socket connected to the server, and the
// queries it has outstanding, by message ID.
type client struct {
	conn *ipv4.PacketConn
	raw  *net.UDPConn
	// outstanding[id] is the send time in ns since the run's start,
	// shifted left once, with the kind in the low bit; 0 when none. One
	// atomic word, so that the sender and the receiver never disagree
	// on which query an ID is.
	outstanding [1 << 16]atomic.Int64
	nextID      uint16
	bufs        [][]byte
	msgs        []ipv4.Message
	stats       clientStats
}

// clientStats are a client's receiver's counts, merged after the run.
type clientStats struct {
	answered, good [kinds]int
	rcodes         [kinds][16]int
	late           int
	latency        histogram
	settled        histogram
	slots          [][kinds]int
}

// batch is the most messages one sendmmsg or recvmmsg call moves.
const batch = 32

func dialClients(spec loadSpec) ([]*client, error) {
	raddr := net.UDPAddrFromAddrPort(spec.server)
	var cs []*client
	for i := range spec.clients {
		laddr := &net.UDPAddr{IP: net.IPv4(127, 0, 1+byte(i/250), 1+byte(i%250))}
		conn, err := net.DialUDP("udp4", laddr, raddr)
		if err != nil {
			closeClients(cs)
			return nil, fmt.Errorf("client %d from %s: %w", i, laddr.IP, err)
		}
		_ = conn.SetReadBuffer(4 << 20)
		_ = conn.SetWriteBuffer(4 << 20)
		c := &client{conn: ipv4.NewPacketConn(conn), raw: conn}
		for range batch {
			buf := make([]byte, 512)
			c.bufs = append(c.bufs, buf)
			c.msgs = append(c.msgs, ipv4.Message{Buffers: [][]byte{buf}})
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeClients(cs []*client) {
	for _, c := range cs {
		c.raw.Close()
	}
}

// runLoad offers the load and waits up to the timeout for the last
// answers.
func runLoad(ctx context.Context, spec loadSpec) (*loadResult, error) {
	cs, err := dialClients(spec)
	if err != nil {
		return nil, err
	}
	defer closeClients(cs)
	start := time.Now()
	slots := int((spec.duration+spec.timeout)/slot) + 1
	var wg sync.WaitGroup
	for _, c := range cs {
		c.stats.slots = make([][kinds]int, slots)
		wg.Go(func() { c.receive(start, spec.timeout) })
	}
	offered, sent := send(ctx, spec, cs, start)
	loadEnd := time.Since(start)
	if spec.onEnd != nil {
		spec.onEnd(start.Add(loadEnd))
	}
	_ = toolflags.SleepCtx(ctx, spec.timeout)
	closeClients(cs) // ends the receivers
	wg.Wait()
	r := &loadResult{Offered: offered, Seconds: loadEnd.Seconds(), Slots: make([][kinds]int, slots)}
	for k := range kinds {
		r.Queries[k] = sent[k]
		r.Sent += sent[k]
		r.Rcodes[k] = map[string]int{}
	}
	for _, c := range cs {
		r.add(&c.stats)
	}
	return r, ctx.Err()
}

// add merges a client's counts.
func (r *loadResult) add(s *clientStats) {
	for k := range kinds {
		r.Answered[k] += s.answered[k]
		r.Good[k] += s.good[k]
		for rc, n := range s.rcodes[k] {
			if n > 0 {
				r.Rcodes[k][rcodeName(rc)] += n
			}
		}
	}
	r.latency.merge(&s.latency)
	r.settled.merge(&s.settled)
	for i := range s.slots {
		for k := range kinds {
			r.Slots[i][k] += s.slots[i][k]
		}
	}
}

// send keeps to the schedule: every wake-up it sends what is due, a batch
// per client in turn, so that every source address carries its share.
func send(ctx context.Context, spec loadSpec, cs []*client, start time.Time) (offered int, sent [kinds]int) {
	externalEvery := 0
	if spec.external > 0 {
		externalEvery = max(1, int(1/spec.external+0.5))
	}
	next := 0
	for n := 0; ; {
		elapsed := time.Since(start)
		if elapsed >= spec.duration || ctx.Err() != nil {
			return offered, sent
		}
		due := int(elapsed.Seconds()*float64(spec.rate)) - offered
		if due <= 0 {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for due > 0 {
			c := cs[next]
			next = (next + 1) % len(cs)
			m := min(due, batch)
			var k [batch]int
			for i := range m {
				k[i] = kindCluster
				if externalEvery > 0 && n%externalEvery == 0 {
					k[i] = kindExternal
				}
				c.pack(i, spec.queries, k[i], n, time.Since(start))
				n++
			}
			done, _ := c.conn.WriteBatch(c.msgs[:m], 0)
			for i := range max(done, 0) {
				sent[k[i]]++
			}
			// What the socket refused is cleared, not waited for.
			for i := max(done, 0); i < m; i++ {
				c.outstanding[c.idAt(i)].Store(0)
			}
			offered += m
			due -= m
		}
	}
}

// pack writes query n of kind k into the client's i-th buffer under a new
// message ID and notes it outstanding.
func (c *client) pack(i int, q *queryPool, k, n int, at time.Duration) {
	var src []byte
	if k == kindCluster {
		src = q.cluster[n%len(q.cluster)]
	} else {
		src = q.external
	}
	buf := c.bufs[i][:len(src)]
	copy(buf, src)
	if k == kindExternal {
		v := q.nextExtern.Add(1)
		const hex = "0123456789abcdef"
		for j := range 8 {
			buf[q.counterAt+j] = hex[(v>>(28-4*j))&0xf]
		}
	}
	id := c.nextID
	c.nextID++
	binary.BigEndian.PutUint16(buf, id)
	c.msgs[i].Buffers[0] = buf
	// An ID still outstanding from 65,536 queries ago was never answered;
	// it stays counted as sent and not answered.
	c.outstanding[id].Store(int64(at)<<1 | int64(k))
}

// idAt is the ID of the query in the client's i-th buffer.
func (c *client) idAt(i int) uint16 { return binary.BigEndian.Uint16(c.msgs[i].Buffers[0]) }

// receive reads answers until the socket is closed.
func (c *client) receive(start time.Time, timeout time.Duration) {
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 4096)}
	}
	for {
		n, err := c.conn.ReadBatch(msgs, 0)
		if err != nil {
			return
		}
		now := time.Since(start)
		for _, m := range msgs[:n] {
			c.answer(m.Buffers[0][:m.N], now, timeout)
		}
	}
}

// answer counts one answer against the query it answers.
func (c *client) answer(b []byte, now, timeout time.Duration) {
	if len(b) < 12 || b[2]&0x80 == 0 {
		return
	}
	sent := c.outstanding[binary.BigEndian.Uint16(b)].Swap(0)
	if sent == 0 {
		c.stats.late++ // its ID was cleared: a duplicate, or reused
		return
	}
	k, at := int(sent&1), time.Duration(sent>>1)
	lat := now - at
	if lat > timeout {
		return // as good as lost: the client gave up
	}
	rcode := int(b[3] & 0xf)
	c.stats.answered[k]++
	c.stats.rcodes[k][rcode]++
	good := rcode == 0 || (k == kindCluster && rcode == 3)
	if !good {
		return
	}
	c.stats.good[k]++
	if s := int(now / slot); s < len(c.stats.slots) {
		c.stats.slots[s][k]++
	}
	if k == kindCluster {
		c.stats.latency.add(lat)
		if at >= settle {
			c.stats.settled.add(lat)
		}
	}
}

func rcodeName(rc int) string {
	names := map[int]string{0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
	if s, ok := names[rc]; ok {
		return s
	}
	return fmt.Sprintf("RCODE%d", rc)
}

// histogram counts durations in buckets 1/32 of a power of two wide (about
// 3% error), from a microsecond to about an hour.
type histogram struct {
	counts [65 * 32]int
	n      int
}

func bucketOf(d time.Duration) int {
	us := uint64(max(d/time.Microsecond, 1))
	e := bits.Len64(us) // us in [2^(e-1), 2^e)
	if e <= 5 {
		return int(us)
	}
	return e*32 + int(us>>(e-6))&31
}

// bucketValue is the middle of bucket b, in the unit bucketOf reads.
func bucketValue(b int) time.Duration {
	if b < 32 {
		return time.Duration(b) * time.Microsecond
	}
	e, m := b/32, b%32
	lo := (uint64(32) + uint64(m)) << (e - 6)
	width := uint64(1) << (e - 6)
	return time.Duration(lo+width/2) * time.Microsecond
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile is the q-th quantile (0 < q ≤ 1), in milliseconds; 0 when
// nothing was counted.
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int(q*float64(h.n) + 0.5)
	rank = max(rank, 1)
	seen := 0
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return float64(bucketValue(b)) / float64(time.Millisecond)
		}
	}
	return 0
}
