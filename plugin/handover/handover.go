// Package handover implements the handover plugin: when CoreDNS shuts down
// while its successor serves the same UDP address (the new pod of a
// DaemonSet update with maxSurge, both bound with SO_REUSEPORT), it takes
// its own sockets out of the kernel's choice, so that new queries go to the
// successor, and answers what it already holds through its lameduck.
// Without it, the kernel keeps handing half the queries to the old sockets
// until they close, and those left in their queues then are lost.
//
// Any process of the same UID can join a SO_REUSEPORT group, so a socket
// beside ours is not trusted for being there: it must be unconnected, of
// our UID, and held by a process that proves, in answer to a probe sent to
// the shared address, that it holds the same key (probe.go). The handover
// is taken back when the successor goes away or stops proving it
// (watch.go).
package handover

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/schemadns/schemadns/plugin/pkg/listeners"
	"golang.org/x/sys/unix"
)

// socket is one of this process's UDP listeners that handover may take out.
type socket = listeners.Socket

// ownSockets lists this process's listeners (package listeners).
func ownSockets() ([]socket, error) {
	ls, err := listeners.Own()
	if err != nil {
		return nil, fmt.Errorf("handover: %w", err)
	}
	return ls, nil
}

// listener inspects fd: a UDP socket, SO_REUSEPORT, bound, not connected.
func listener(fd int) (socket, bool) { return listeners.Inspect(fd) }

// procSocket is one line of /proc/net/udp or tcp: what the network
// namespace tells about a socket of any process.
type procSocket struct {
	local, remote netip.AddrPort
	uid           uint32
	inode         uint64
}

// connected: a connected socket has a remote port; the kernel gives it
// only datagrams from that peer, so it takes no share of the clients'.
func (p procSocket) connected() bool { return p.remote.Port() != 0 }

// boundUDP reads /proc/net/udp and udp6: every UDP socket of the network
// namespace by local address.
func boundUDP() (map[netip.AddrPort][]procSocket, error) {
	out := map[netip.AddrPort][]procSocket{}
	add := func(p procSocket) bool {
		out[p.local] = append(out[p.local], p)
		return true
	}
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		if err := readProcNet(f, add); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return out, nil
}

// readProcNet calls each for the sockets of one /proc/net/{udp,tcp}*
// table until it returns false: the local and remote addresses are
// columns 2 and 3 (hex address in host byte order per 32-bit word, colon,
// hex port), the uid column 8, the inode column 10. A socket being closed
// has inode 0 and is left out.
func readProcNet(path string, each func(procSocket) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("handover: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		p, ok := parseProcLine(sc.Text())
		if ok && !each(p) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("handover: %s: %w", path, err)
	}
	return nil
}

func parseProcLine(line string) (procSocket, bool) {
	fields := strings.Fields(line)
	if len(fields) < 10 {
		return procSocket{}, false
	}
	local, ok1 := parseProcAddr(fields[1])
	remote, ok2 := parseProcAddr(fields[2])
	uid, err1 := strconv.ParseUint(fields[7], 10, 32)
	inode, err2 := strconv.ParseUint(fields[9], 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || inode == 0 {
		return procSocket{}, false
	}
	return procSocket{local: local, remote: remote, uid: uint32(uid), inode: inode}, true
}

// parseProcAddr reads "0A14FEA9:0035" (169.254.20.10:53 on a little-endian
// machine) or its 32-hex-digit IPv6 form.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok || (len(hexAddr) != 8 && len(hexAddr) != 32) {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	var b [16]byte
	for w := 0; w < len(hexAddr)/8; w++ {
		v, err := strconv.ParseUint(hexAddr[w*8:w*8+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, false
		}
		// Each 32-bit word is printed as the host reads it.
		word := [4]byte{}
		binary.NativeEndian.PutUint32(word[:], uint32(v))
		copy(b[w*4:], word[:])
	}
	if len(hexAddr) == 8 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(port)), true
	}
	return netip.AddrPortFrom(netip.AddrFrom16(b).Unmap(), uint16(port)), true
}

// candidates are the sockets beside s that would take its share of the
// clients' datagrams once s is out of the kernel's choice: bound to s's
// address, not ours, not connected. A socket connected to itself (an
// older instance still in its lameduck) receives nothing from clients and
// is no successor.
func candidates(s socket, bound map[netip.AddrPort][]procSocket, ours map[uint64]bool) []procSocket {
	var out []procSocket
	for _, p := range bound[s.Local] {
		if !ours[p.inode] && !p.connected() {
			out = append(out, p)
		}
	}
	return out
}

// connectSelf takes s out of the kernel's choice: connected to its own
// address, it only takes datagrams from there, which no client sends, and
// keeps what its queue already holds.
func connectSelf(s socket) error {
	var sa unix.Sockaddr
	if s.Local.Addr().Is4() {
		sa = &unix.SockaddrInet4{Addr: s.Local.Addr().As4(), Port: int(s.Local.Port())}
	} else {
		sa = &unix.SockaddrInet6{Addr: s.Local.Addr().As16(), Port: int(s.Local.Port())}
	}
	return retryEINTR(func() error { return unix.Connect(s.FD, sa) })
}

// disconnect puts s back into the kernel's choice: connect(2) with
// AF_UNSPEC dissolves the association, and a socket bound to its address
// explicitly keeps it. x/sys/unix has no AF_UNSPEC sockaddr, hence the raw
// call.
func disconnect(s socket) error {
	sa := unix.RawSockaddr{Family: unix.AF_UNSPEC}
	return retryEINTR(func() error {
		_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(s.FD), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)) // #nosec G103 -- connect(2) takes a pointer
		if errno != 0 {
			return errno
		}
		return nil
	})
}

func retryEINTR(f func() error) error {
	err := f()
	if errors.Is(err, syscall.EINTR) {
		err = f()
	}
	return err
}
