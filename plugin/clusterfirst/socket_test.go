package clusterfirst

import (
	"context"
	"errors"
	"math"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/listeners"
	"golang.org/x/sys/unix"
)

// listenUDP binds a UDP listener on loopback as CoreDNS does (SO_REUSEPORT),
// with a receive buffer of rcvbuf bytes when not 0.
func listenUDP(t *testing.T, rcvbuf int) (*net.UDPConn, listeners.Socket) {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if serr == nil && rcvbuf > 0 {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
			}
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn := pc.(*net.UDPConn)
	t.Cleanup(func() { conn.Close() })
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var s listeners.Socket
	var ok bool
	if err := rc.Control(func(fd uintptr) { s, ok = listeners.Inspect(int(fd)) }); err != nil || !ok {
		t.Fatalf("the listener is not found as one: %v", err)
	}
	return conn, s
}

// queuesOf follows the given listeners as the sampler would its server's.
func queuesOf(port uint16, socks ...listeners.Socket) *udpQueues {
	q := newUDPQueues(port, []string{"cluster.local."})
	q.find = func() ([]listeners.Socket, error) { return socks, nil }
	return q
}

// send writes n queries for a cluster name to addr.
func send(t *testing.T, addr net.Addr, n int) {
	t.Helper()
	sendRaw(t, addr, n, packQuery(t, "web.default.svc.cluster.local.", false))
}

// sendRaw writes n datagrams of msg to addr.
func sendRaw(t *testing.T, addr net.Addr, n int, msg []byte) {
	t.Helper()
	c, err := net.Dial("udp4", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		if _, err := c.Write(msg); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
}

// receive reads datagrams until none comes for 100 ms.
func receive(conn *net.UDPConn) int {
	buf := make([]byte, 512)
	n := 0
	for {
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, _, err := conn.ReadFrom(buf); err != nil {
			return n
		}
		n++
	}
}

func TestFilterDropsAtRandomAndComesOff(t *testing.T) {
	conn, s := listenUDP(t, 4<<20)
	q := queuesOf(s.Local.Port(), s)
	q.read(0)
	if on, classifies := q.filter(0.5, 1, true, 0); !on || !classifies {
		t.Fatalf("the filter did not go on the one listener (on %v, tells the names apart %v)", on, classifies)
	}
	const sent = 2000
	// Sent and read in rounds that the buffer holds, so that every drop
	// is the filter's.
	got := 0
	for range 10 {
		send(t, conn.LocalAddr(), sent/10)
		got += receive(conn)
	}
	if got < sent*4/10 || got > sent*6/10 {
		t.Errorf("with a drop probability of 0.5, %d of %d datagrams came through", got, sent)
	}
	if r := q.read(time.Second); r.dropped != uint64(sent-got) || r.listeners != 1 {
		t.Errorf("the listener's drops: %d of 1 listener read, want %d (sent %d, read %d)", r.dropped, sent-got, sent, got)
	}
	// Within the episode, under one step and at 0, the filter stays on
	// and drops no cluster name; once the episode ends it comes off.
	for _, c := range []struct {
		p       float64
		episode bool
	}{{1.0 / 2048, true}, {0, true}, {0, false}} {
		on, _ := q.filter(c.p, 1, c.episode, 2*time.Second)
		if on != c.episode || q.filtering() != c.episode {
			t.Fatalf("p %g, episode %v: the filter on %v", c.p, c.episode, on)
		}
		send(t, conn.LocalAddr(), 200)
		if n := receive(conn); n != 200 {
			t.Errorf("p %g: %d of 200 datagrams came through, want all", c.p, n)
		}
	}
}

func TestFilterAtOneDropsAll(t *testing.T) {
	conn, s := listenUDP(t, 0)
	q := queuesOf(s.Local.Port(), s)
	q.read(0)
	if on, _ := q.filter(1, 1, true, 0); !on {
		t.Fatal("the filter did not go on")
	}
	send(t, conn.LocalAddr(), 100)
	if n := receive(conn); n != 0 {
		t.Errorf("p 1: %d of 100 came through, want none", n)
	}
	q.unfilter()
}

func TestQueuesSeeOverflow(t *testing.T) {
	conn, s := listenUDP(t, 1) // the kernel's least buffer: a few datagrams
	q := queuesOf(s.Local.Port(), s)
	if r := q.read(0); r.dropped != 0 || r.listeners != 1 {
		t.Fatalf("first reading: %+v, want one listener and no drops", r)
	}
	send(t, conn.LocalAddr(), 500)
	r := q.read(time.Millisecond)
	if r.dropped == 0 || r.fill < 0.5 {
		t.Errorf("500 datagrams into a full buffer that no one reads: %+v, want drops and a fill near 1", r)
	}
	read := receive(conn)
	if uint64(read)+r.dropped != 500 {
		t.Errorf("read %d and dropped %d, want 500 in all", read, r.dropped)
	}
	if r := q.read(2 * time.Millisecond); r.dropped != 0 || r.fill != 0 {
		t.Errorf("after reading everything: %+v, want no new drops and an empty queue", r)
	}
}

func TestQueuesFollowOnlyTheServersPort(t *testing.T) {
	_, ours := listenUDP(t, 0)
	other, theirs := listenUDP(t, 1)
	q := queuesOf(ours.Local.Port(), ours, theirs)
	q.read(0)
	send(t, other.LocalAddr(), 500) // overflows the other listener only
	if r := q.read(time.Millisecond); r.listeners != 1 || r.dropped != 0 {
		t.Errorf("another port's overflow: %+v, want one listener and no drops", r)
	}
	receive(other)
	if on, _ := q.filter(1, 1, true, 0); !on {
		t.Fatal("the filter did not go on")
	}
	send(t, other.LocalAddr(), 1)
	if receive(other) != 1 {
		t.Error("the filter went on another port's listener")
	}
}

func TestQueuesLeaveAClosedListener(t *testing.T) {
	conn, s := listenUDP(t, 0)
	q := queuesOf(s.Local.Port(), s)
	q.read(0)
	conn.Close()
	// The descriptor may now name another file; a socket that is not the
	// one found is neither read nor filtered.
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := q.read(time.Millisecond); r.listeners != 0 {
		t.Errorf("a closed listener was read: %+v", r)
	}
	if on, _ := q.filter(1, 1, true, 0); on {
		t.Error("a filter went on a closed listener")
	}
}

func TestDropFilterThresholds(t *testing.T) {
	q := queuesOf(0)
	if on, _ := q.filter(1, 1, true, 0); on {
		t.Error("no listener: the drops cannot be the kernel's")
	}
	for _, c := range []struct {
		p     float64
		want  uint32
		drops bool
	}{
		{1, 0, true}, {2, 0, true}, {0.5, math.MaxUint32 / 2, true},
		{1023.9 / 1024, math.MaxUint32 / 1024, true}, {1.0 / 1024, math.MaxUint32 / 1024 * 1023, true},
		{0.99 / 1024, math.MaxUint32, false}, {0, math.MaxUint32, false}, {-1, math.MaxUint32, false},
	} {
		got, drops := filterThreshold(c.p)
		if diff := int64(got) - int64(c.want); diff > 1024 || diff < -1024 || drops != c.drops {
			t.Errorf("p %g: keep below %d (drops %v), want %d (%v)", c.p, got, drops, c.want, c.drops)
		}
	}
}

// TestOverflowMustBeSustained: one reading of drops (a pause the server
// then drains) is no overflow; drops at every reading for 20 ms are, and
// open the standing queue at once.
func TestOverflowMustBeSustained(t *testing.T) {
	var ss socketSignal
	drops := queueReading{dropped: 3, listeners: 1}
	ms := time.Millisecond
	ss.follow(drops, false, 0)
	ss.follow(queueReading{listeners: 1}, false, 2*ms) // drained
	for now := 4 * ms; now < 24*ms; now += 2 * ms {
		ss.follow(drops, false, now)
		if ss.overflow(now) {
			t.Fatalf("at %v, drops for %v only: an overflow", now, now-4*ms)
		}
	}
	ss.follow(drops, false, 24*ms)
	if !ss.overflow(24*ms) || !ss.overflowed(24*ms) {
		t.Fatal("drops at every reading for 20 ms: no overflow")
	}
	if ss.overflow(26*ms) || !ss.overflowed(26*ms) {
		t.Error("overflow is only the reading's; overflowed lasts a standing")
	}
	if ss.overflowed(24*ms + standing) {
		t.Error("overflowed after a standing without drops")
	}
	// The filter's own drops are shedding, not an overflow.
	var shed socketSignal
	for now := time.Duration(0); now <= 40*ms; now += 2 * ms {
		shed.follow(drops, true, now)
	}
	if shed.overflowed(40 * ms) {
		t.Error("the filter's drops counted as an overflow")
	}
	// A sustained overflow proves the standing queue at once and pushes
	// the other names' odds up, whatever the run queue's delay.
	c := &controller{target: defaultTarget, bound: defaultBound}
	sh := c.step(reading{overflow: true, sockets: true}, true, samplePeriod)
	if !c.episode || sh.other() == 0 || sh.cluster() != 0 {
		t.Errorf("an overflow: episode %v, odds %d/%d, want an episode and other names' odds only", c.episode, sh.other(), sh.cluster())
	}
}

// TestFilterReplacedAtMostEvery50ms: new odds within reattachEvery keep
// the filter in use; after it, the new one goes on. A filter taken off
// by another (a reloaded instance stopping) is put back at the next
// check, reassertEvery later, and not before.
func TestFilterReplacedAtMostEvery50ms(t *testing.T) {
	conn, s := listenUDP(t, 4<<20)
	q := queuesOf(s.Local.Port(), s)
	q.read(0)
	ms := time.Millisecond
	if on, _ := q.filter(1, 1, true, 0); !on {
		t.Fatal("the filter did not go on")
	}
	allPass := func(want int, what string) {
		t.Helper()
		send(t, conn.LocalAddr(), 100)
		if n := receive(conn); n != want {
			t.Errorf("%s: %d of 100 cluster queries came through, want %d", what, n, want)
		}
	}
	// New odds (no cluster name dropped) 10 ms later: the filter in use
	// stays, and drops every cluster name still.
	q.filter(0, 1, true, 10*ms)
	allPass(0, "odds changed 10 ms after the filter went on")
	q.filter(0, 1, true, reattachEvery)
	allPass(100, "odds changed a reattachEvery after")
	// Taken off by another: back at the next check.
	detachFilter(s.FD)
	q.filter(0, 1, true, reattachEvery+reassertEvery/2)
	if filterLen(s.FD) != 0 {
		t.Error("the filter was put back before the check was due")
	}
	q.filter(0, 1, true, reattachEvery+reassertEvery)
	if got := filterLen(s.FD); got != len(q.prog) || got == 0 {
		t.Errorf("after a reassertEvery the listener's filter has %d instructions, want the program's %d", got, len(q.prog))
	}
}

// rcvbuf is the receive buffer the kernel gives the listener.
func rcvbuf(t *testing.T, s listeners.Socket) int {
	t.Helper()
	n, err := unix.GetsockoptInt(s.FD, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFilterBoundsTheBufferAndGivesItBack(t *testing.T) {
	conn, s := listenUDP(t, 256<<10) // the kernel doubles it: 512 KiB
	whole := rcvbuf(t, s)
	q := queuesOf(s.Local.Port(), s)
	q.read(0)
	if on, _ := q.filter(0, 1, true, 0); !on {
		t.Fatal("the filter did not go on")
	}
	if got, want := rcvbuf(t, s), int(float64(whole)*episodeBuffer); got != want {
		t.Fatalf("within the episode the buffer is %d bytes, want %d (%g of %d)", got, want, episodeBuffer, whole)
	}

	// A burst that half the whole buffer holds: the bounded one keeps
	// what fits and the kernel drops the rest at the tail, where no
	// cluster name is dropped at random (p 0). The fill is still read
	// against the whole buffer.
	truesize := datagramSize(t, conn, s)
	burst := whole / 2 / truesize
	send(t, conn.LocalAddr(), burst)
	r := q.read(time.Millisecond)
	if r.dropped == 0 || r.fill > episodeBuffer+0.05 {
		t.Errorf("a burst of %d datagrams of %d bytes into the bounded buffer: %+v, want drops and a fill of at most %g", burst, truesize, r, episodeBuffer)
	}
	if read := receive(conn); read == burst || uint64(read)+r.dropped != uint64(burst) {
		t.Errorf("read %d and dropped %d of %d", read, r.dropped, burst)
	}

	// Once the episode ends, the buffer is whole again and holds it all.
	if on, _ := q.filter(0, 0, false, time.Second); on {
		t.Fatal("the filter stayed on after the episode")
	}
	if got := rcvbuf(t, s); got != whole {
		t.Fatalf("after the episode the buffer is %d bytes, want %d back", got, whole)
	}
	send(t, conn.LocalAddr(), burst)
	if r := q.read(2 * time.Second); r.dropped != 0 {
		t.Errorf("the same burst after the episode: %d dropped, want 0", r.dropped)
	}
	if read := receive(conn); read != burst {
		t.Errorf("after the episode read %d of %d", read, burst)
	}
}

func TestBufferKeptWholeAcrossAReload(t *testing.T) {
	_, s := listenUDP(t, 256<<10)
	whole := rcvbuf(t, s)
	old := queuesOf(s.Local.Port(), s)
	old.read(0)
	old.filter(0, 1, true, 0)
	// The new instance first sees the buffer the old one bounded, then
	// the whole one once the old one has stopped.
	next := queuesOf(s.Local.Port(), s)
	next.read(0)
	old.unfilter()
	next.read(time.Millisecond)
	next.filter(0, 1, true, time.Millisecond)
	if got, want := rcvbuf(t, s), int(float64(whole)*episodeBuffer); got != want {
		t.Errorf("bounded by the new instance: %d bytes, want %d", got, want)
	}
	next.unfilter()
	if got := rcvbuf(t, s); got != whole {
		t.Errorf("after both: %d bytes, want %d back", got, whole)
	}
}

// datagramSize is what one query datagram costs the listener's buffer
// (the kernel charges a buffer's whole allocation, not the payload).
func datagramSize(t *testing.T, conn *net.UDPConn, s listeners.Socket) int {
	t.Helper()
	send(t, conn.LocalAddr(), 1)
	st, ok := readStats(s.FD)
	if !ok || st.queued == 0 {
		t.Fatalf("SO_MEMINFO after one datagram: %+v", st)
	}
	if receive(conn) != 1 {
		t.Fatal("the datagram did not come through")
	}
	return int(st.queued)
}
