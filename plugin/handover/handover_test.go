package handover

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// reusePort listens on addr with SO_REUSEPORT, as CoreDNS does.
func reusePort(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		if err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.(*net.UDPConn)
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

// send sends n datagrams to addr, each from a new socket (a new source
// port, as a resolver's lookups come).
func send(t *testing.T, addr string, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("q")); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// drain counts the datagrams waiting on c.
func drain(c *net.UDPConn) int {
	buf := make([]byte, 16)
	n := 0
	for {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, _, err := c.ReadFrom(buf); err != nil {
			return n
		}
		n++
	}
}

// TestHandOver: two processes' listeners share an address; once the old
// one is handed over, every new datagram goes to the new one, and the old
// one still reads what it had queued.
func TestHandOver(t *testing.T) {
	old := reusePort(t, "127.0.0.1:0")
	addr := old.LocalAddr().String()
	fresh := reusePort(t, addr)
	oldSock := socketOf(t, old)
	if want := netip.MustParseAddrPort(addr); oldSock.local != want {
		t.Fatalf("local %s, want %s", oldSock.local, want)
	}
	send(t, addr, 200)
	queued := 0
	// The kernel spreads by source port: the old one has its share queued.
	bound, err := boundUDP()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(bound[oldSock.local]); got != 2 {
		t.Fatalf("/proc/net/udp has %d sockets on %s, want 2", got, addr)
	}
	done := handOver([]socket{oldSock}, bound)
	if len(done) != 1 {
		t.Fatalf("handed over %d sockets, want 1", len(done))
	}
	queued = drain(old)
	before := drain(fresh)
	if queued == 0 || before == 0 || queued+before != 200 {
		t.Fatalf("before the handover: %d queued on the old socket, %d on the new; want both some, 200 in all", queued, before)
	}
	send(t, addr, 200)
	if got, gotFresh := drain(old), drain(fresh); got != 0 || gotFresh != 200 {
		t.Errorf("after the handover: %d on the old socket, %d on the new; want 0 and 200", got, gotFresh)
	}
	if _, ok := listener(oldSock.fd); ok {
		t.Error("the handed-over socket still counts as a listener")
	}
}

// TestNoHandOverAlone: with no other process on the address, the
// listener keeps serving (a pod that is deleted, not replaced, answers
// through its lameduck).
func TestNoHandOverAlone(t *testing.T) {
	alone := reusePort(t, "127.0.0.1:0")
	s := socketOf(t, alone)
	bound, err := boundUDP()
	if err != nil {
		t.Fatal(err)
	}
	if done := handOver([]socket{s}, bound); len(done) != 0 {
		t.Fatalf("handed over %d sockets with no other process there", len(done))
	}
	send(t, alone.LocalAddr().String(), 20)
	if got := drain(alone); got != 20 {
		t.Errorf("%d of 20 datagrams reached the listener", got)
	}
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
