package handover

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"
)

// testName is the name of the clients' queries; probes have others.
const testName = "q.example."

// reusePort listens on addr with SO_REUSEPORT, as CoreDNS does. Port 0
// is a free port, bound by number as CoreDNS binds :53: the kernel keeps
// the port of a disconnected socket only if it was asked for by number.
func reusePort(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	if ap := netip.MustParseAddrPort(addr); ap.Port() == 0 {
		free, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		if err != nil {
			t.Fatal(err)
		}
		addr = free.LocalAddr().String()
		free.Close()
	}
	lc := reusePortConfig()
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.(*net.UDPConn)
}

func reusePortConfig() net.ListenConfig {
	return net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		if err != nil {
			return err
		}
		return serr
	}}
}

// socketOf is the handover view of a listener.
func socketOf(t *testing.T, c *net.UDPConn) socket {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var s socket
	var ok bool
	if err := rc.Control(func(fd uintptr) { s, ok = listener(int(fd)) }); err != nil || !ok {
		t.Fatalf("not seen as a listener: %v", err)
	}
	return s
}

// isListener tells whether s is still in the kernel's choice (not
// connected).
func isListener(s socket) bool {
	_, ok := listener(s.FD)
	return ok
}

// send sends n queries for testName to addr, each from a new socket (a
// new source port, as a resolver's lookups come).
func send(t *testing.T, addr string, n int) {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(testName, dns.TypeA)
	b, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// drain counts the queries for testName waiting on c (a probe that the
// kernel gave it is not counted).
func drain(c *net.UDPConn) int {
	buf := make([]byte, 512)
	n := 0
	for {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		k, _, err := c.ReadFrom(buf)
		if err != nil {
			return n
		}
		m := new(dns.Msg)
		if m.Unpack(buf[:k]) == nil && len(m.Question) == 1 && m.Question[0].Name == testName {
			n++
		}
	}
}

// instance is a server of this program: handover's handler in front of a
// handler that counts the clients' queries.
type instance struct {
	h    *Handover
	srv  *dns.Server
	conn *net.UDPConn
	got  atomic.Int64
}

// startInstance serves addr with key, as a successor pod does: its
// answers vouch for its own socket only (every test socket lives in this
// one process).
func startInstance(t *testing.T, addr string, key []byte) *instance {
	t.Helper()
	in := &instance{conn: reusePort(t, addr)}
	own := socketOf(t, in.conn).Inode
	in.h = &Handover{key: key, listeners: func(netip.AddrPort) []uint64 { return []uint64{own} }}
	in.h.Next = plugin.HandlerFunc(func(_ context.Context, _ dns.ResponseWriter, r *dns.Msg) (int, error) {
		if r.Question[0].Name == testName {
			in.got.Add(1)
		}
		return dns.RcodeSuccess, nil
	})
	started := make(chan struct{})
	in.srv = &dns.Server{PacketConn: in.conn, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { in.h.ServeDNS(context.Background(), w, r) })}
	go in.srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { in.srv.Shutdown() })
	return in
}

// waitCount waits until f reaches want, and returns what it reached.
func waitCount(f func() int64, want int64) int64 {
	for end := time.Now().Add(2 * time.Second); f() < want && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	return f()
}

// watchFor runs the watch of a shutting-down process that owns old until
// the test ends.
func watchFor(t *testing.T, key []byte, old socket) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { newWatch(key).run(ctx, []socket{old}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFor polls cond for up to d.
func waitFor(cond func() bool, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func testKey(b byte) []byte {
	k := make([]byte, keySize)
	for i := range k {
		k[i] = b
	}
	return k
}

// TestForeignSocketGetsNothing: a same-UID socket that never reads, bound
// beside the server, proves no key: the server keeps its listener and
// receives its share, and the stranger gets no datagram through a
// handover (only the share the kernel gives it anyway).
func TestForeignSocketGetsNothing(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	foreign := reusePort(t, addr)
	oldSock := socketOf(t, old)
	before := testutil.ToFloat64(refused.WithLabelValues(reasonUnverified))
	watchFor(t, testKey(1), oldSock)
	// Two probe rounds at least.
	time.Sleep(reprobeEvery + 2*probeTimeout)
	if !isListener(oldSock) {
		t.Fatal("handed over to a socket that proved no key")
	}
	if got := testutil.ToFloat64(refused.WithLabelValues(reasonUnverified)) - before; got != 1 {
		t.Errorf("refused_total{reason=unverified} rose by %v, want 1 (once per listener and reason)", got)
	}
	drain(old)
	drain(foreign)
	send(t, addr, 200)
	atOld, atForeign := drain(old), drain(foreign)
	if atOld+atForeign != 200 || atOld < 40 {
		t.Errorf("after the refusal: %d of 200 at the server, %d at the stranger; want the server's share (the two 200)", atOld, atForeign)
	}
}

// TestStrangerWithAnotherKey: a process that answers probes, but with
// another key, is no successor either.
func TestStrangerWithAnotherKey(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	stranger := startInstance(t, addr, testKey(2))
	oldSock := socketOf(t, old)
	watchFor(t, testKey(1), oldSock)
	time.Sleep(reprobeEvery + 2*probeTimeout)
	if !isListener(oldSock) {
		t.Fatal("handed over to a process with another key")
	}
	drain(old)
	send(t, addr, 200)
	atOld := drain(old)
	if got := waitCount(stranger.got.Load, int64(200-atOld)); atOld < 40 || got+int64(atOld) != 200 {
		t.Errorf("%d of 200 at the server, %d at the stranger; want the server's share", atOld, got)
	}
}

// TestConnectedSocketIsNoPeer: a socket connected to itself (an older
// instance still in its lameduck, its listener handed over) takes no
// share of the clients' datagrams and is nobody's successor: the server
// keeps its listener and receives every datagram.
func TestConnectedSocketIsNoPeer(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	older := reusePort(t, addr)
	olderSock := socketOf(t, older)
	if err := connectSelf(olderSock); err != nil {
		t.Fatal(err)
	}
	oldSock := socketOf(t, old)
	before := testutil.ToFloat64(handedOver)
	watchFor(t, testKey(1), oldSock)
	time.Sleep(reprobeEvery + 2*probeTimeout)
	if !isListener(oldSock) || testutil.ToFloat64(handedOver) != before {
		t.Fatal("handed over beside a connected socket only")
	}
	send(t, addr, 200)
	if atOld, atOlder := drain(old), drain(older); atOld != 200 || atOlder != 0 {
		t.Errorf("%d of 200 at the server, %d lost to the connected socket; want 200 and 0", atOld, atOlder)
	}
}

// TestHandOverToSuccessor: a second instance with the same key proves
// it: the old listener is handed over, every new datagram reaches the
// successor, and the old one still reads what it had queued.
func TestHandOverToSuccessor(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	key := testKey(1)
	succ := startInstance(t, addr, key)
	oldSock := socketOf(t, old)
	send(t, addr, 100) // queued before the handover
	before := testutil.ToFloat64(handedOver)
	watchFor(t, key, oldSock)
	if !waitFor(func() bool { return !isListener(oldSock) }, 3*time.Second) {
		t.Fatal("not handed over to a successor with the key")
	}
	if got := testutil.ToFloat64(handedOver) - before; got != 1 {
		t.Errorf("sockets_total rose by %v, want 1", got)
	}
	queued := drain(old)
	if got := waitCount(succ.got.Load, int64(100-queued)); queued == 0 || int64(queued)+got != 100 {
		t.Fatalf("before the handover: %d queued at the old listener, %d at the successor; want both some, 100 in all", queued, got)
	}
	succ.got.Store(0)
	send(t, addr, 200)
	if got, atOld := waitCount(succ.got.Load, 200), drain(old); got != 200 || atOld != 0 {
		t.Errorf("after the handover: %d of 200 at the successor, %d at the old listener; want 200 and 0", got, atOld)
	}
}

// TestTakeBackWhenSuccessorGoes: the successor exits after the handover;
// the old listener is put back into the kernel's choice and receives
// every new datagram.
func TestTakeBackWhenSuccessorGoes(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	key := testKey(1)
	succ := startInstance(t, addr, key)
	oldSock := socketOf(t, old)
	before := testutil.ToFloat64(takenBack)
	watchFor(t, key, oldSock)
	if !waitFor(func() bool { return !isListener(oldSock) }, 3*time.Second) {
		t.Fatal("not handed over to a successor with the key")
	}
	succ.srv.Shutdown()
	succ.conn.Close()
	if !waitFor(func() bool { return isListener(oldSock) }, time.Second) {
		t.Fatal("not taken back once the successor was gone")
	}
	if got := testutil.ToFloat64(takenBack) - before; got != 1 {
		t.Errorf("taken_back_total rose by %v, want 1", got)
	}
	drain(old)
	send(t, addr, 200)
	if got := drain(old); got != 200 {
		t.Errorf("after the take back: %d of 200 at the old listener", got)
	}
}

// TestTakeBackWhenSuccessorStopsProving: the successor is still bound but
// no longer answers probes (it is shutting down itself): the handover is
// taken back at the next probe round, and no datagram is lost. Which of
// the two then receives is the kernel's: from Linux 6.13 a UDP socket
// that connects leaves its SO_REUSEPORT group for good, and disconnected
// it receives all of the address's datagrams or none, by its place in the
// kernel's hash chain (see TestDisconnectedAlone).
func TestTakeBackWhenSuccessorStopsProving(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	key := testKey(1)
	succ := startInstance(t, addr, key)
	oldSock := socketOf(t, old)
	before := testutil.ToFloat64(takenBack)
	watchFor(t, key, oldSock)
	if !waitFor(func() bool { return !isListener(oldSock) }, 3*time.Second) {
		t.Fatal("not handed over to a successor with the key")
	}
	succ.h.stopping.Store(true)
	if !waitFor(func() bool { return isListener(oldSock) }, reprobeEvery+3*probeTimeout) {
		t.Fatal("not taken back once the successor stopped answering probes")
	}
	if got := testutil.ToFloat64(takenBack) - before; got != 1 {
		t.Errorf("taken_back_total rose by %v, want 1", got)
	}
	drain(old)
	succ.got.Store(0)
	send(t, addr, 200)
	atOld := drain(old)
	if got := waitCount(succ.got.Load, int64(200-atOld)); int64(atOld)+got != 200 {
		t.Errorf("after the take back: %d of 200 at the old listener, %d at the successor; want 200 in all", atOld, got)
	}
}

// TestDisconnectedAlone: on loopback, a listener connected to itself
// takes none of the clients' datagrams; disconnected (AF_UNSPEC) once the
// socket beside it is gone, it takes every one again.
func TestDisconnectedAlone(t *testing.T) {
	a := reusePort(t, "127.0.0.1:0")
	addr := a.LocalAddr().String()
	b := reusePort(t, addr)
	s := socketOf(t, a)
	if err := connectSelf(s); err != nil {
		t.Fatal(err)
	}
	send(t, addr, 100)
	if atA, atB := drain(a), drain(b); atA != 0 || atB != 100 {
		t.Fatalf("connected: %d at it, %d beside it; want 0 and 100", atA, atB)
	}
	if err := disconnect(s); err != nil {
		t.Fatal(err)
	}
	if !isListener(s) {
		t.Fatal("disconnected, it is not a listener again")
	}
	b.Close()
	send(t, addr, 200)
	if got := drain(a); got != 200 {
		t.Errorf("disconnected and alone: %d of 200 at it", got)
	}
}

// TestNoKeyNoHandOver: without a key, even a genuine successor is not
// handed anything (the degraded mode of a missing key file).
func TestNoKeyNoHandOver(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	startInstance(t, addr, testKey(1))
	oldSock := socketOf(t, old)
	before := testutil.ToFloat64(refused.WithLabelValues(reasonNoKey))
	watchFor(t, nil, oldSock)
	time.Sleep(reprobeEvery + 2*probeTimeout)
	if !isListener(oldSock) {
		t.Fatal("handed over without a key")
	}
	if got := testutil.ToFloat64(refused.WithLabelValues(reasonNoKey)) - before; got != 1 {
		t.Errorf("refused_total{reason=no_key} rose by %v, want 1", got)
	}
}

// TestProbeProof: an answer proves only the inodes it names, under the
// key and nonce it was asked with.
func TestProbeProof(t *testing.T) {
	key, nonce := testKey(1), make([]byte, nonceSize)
	if _, ok := parseProbe(key, probeName(key, nonce)); !ok {
		t.Fatal("a probe of the key is refused")
	}
	if _, ok := parseProbe(testKey(2), probeName(key, nonce)); ok {
		t.Fatal("a probe of another key is taken")
	}
	claim := "inodes=7,9"
	reply := func(k []byte, n []byte, c string) *dns.Msg {
		m := new(dns.Msg)
		m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeTXT}, Txt: []string{c, "mac=" + hexMac(k, n, c)}}}
		return m
	}
	if got := verifyAnswer(key, nonce, reply(key, nonce, claim)); len(got) != 2 || got[0] != 7 || got[1] != 9 {
		t.Errorf("a genuine answer proves %v, want [7 9]", got)
	}
	other := make([]byte, nonceSize)
	other[0] = 1
	for name, m := range map[string]*dns.Msg{
		"another key":   reply(testKey(2), nonce, claim),
		"another nonce": reply(key, other, claim),
		"a claim it did not sign": func() *dns.Msg {
			m := reply(key, nonce, claim)
			m.Answer[0].(*dns.TXT).Txt[0] = "inodes=7,9,11"
			return m
		}(),
	} {
		if got := verifyAnswer(key, nonce, m); got != nil {
			t.Errorf("%s: proves %v", name, got)
		}
	}
}

func hexMac(key, nonce []byte, claim string) string {
	const digits = "0123456789abcdef"
	m := mac(key, answerLabel, nonce, claim)
	out := make([]byte, 0, 2*len(m))
	for _, b := range m {
		out = append(out, digits[b>>4], digits[b&15])
	}
	return string(out)
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0A14FEA9:0035":                         "169.254.20.10:53",
		"0100007F:14E9":                         "127.0.0.1:5353",
		"00000000000000000000000001000000:0035": "[::1]:53",
		"0000000000000000FFFF00000100007F:0035": "127.0.0.1:53",
	} {
		got, ok := parseProcAddr(in)
		if !ok || got != netip.MustParseAddrPort(want) {
			t.Errorf("parseProcAddr(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "0A14FEA9", "0A14FEA9:zz", "0A14:0035"} {
		if _, ok := parseProcAddr(bad); ok {
			t.Errorf("parseProcAddr(%q) accepted", bad)
		}
	}
}
