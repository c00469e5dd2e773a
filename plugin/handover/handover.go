// Package handover implements the handover plugin: when CoreDNS shuts down
// while another process serves the same UDP address (the new pod of a
// DaemonSet update with maxSurge, both bound with SO_REUSEPORT), it takes
// its own sockets out of the kernel's choice at once, so that new queries
// go to the other process, and answers what it already holds through its
// lameduck. Without it, the kernel keeps handing half the queries to the
// old sockets until they close, and those left in their queues then are
// lost.
package handover

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// socket is one of this process's UDP sockets that handover may take out.
type socket struct {
	fd    int
	inode uint64
	local netip.AddrPort
}

// ownSockets lists this process's bound, unconnected UDP sockets with
// SO_REUSEPORT: the listeners CoreDNS made (an upstream's socket is
// connected, and has no SO_REUSEPORT).
func ownSockets() ([]socket, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("handover: %w", err)
	}
	var out []socket
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, ok := listener(fd); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// listener inspects fd: a UDP socket, SO_REUSEPORT, bound, not connected.
func listener(fd int) (socket, bool) {
	link, err := os.Readlink(filepath.Join("/proc/self/fd", strconv.Itoa(fd)))
	if err != nil || !strings.HasPrefix(link, "socket:[") {
		return socket{}, false
	}
	inode, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
	if err != nil {
		return socket{}, false
	}
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_DGRAM {
		return socket{}, false
	}
	if rp, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT); err != nil || rp == 0 {
		return socket{}, false
	}
	if _, err := unix.Getpeername(fd); err == nil {
		return socket{}, false // connected: not a listener
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return socket{}, false
	}
	local, ok := addrPort(sa)
	if !ok || local.Port() == 0 {
		return socket{}, false
	}
	return socket{fd: fd, inode: inode, local: local}, true
}

func addrPort(sa unix.Sockaddr) (netip.AddrPort, bool) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), true // #nosec G115 -- a port
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)), true // #nosec G115 -- a port
	}
	return netip.AddrPort{}, false
}

// boundUDP reads /proc/net/udp and udp6: the inodes of every UDP socket of
// the network namespace by local address.
func boundUDP() (map[netip.AddrPort][]uint64, error) {
	out := map[netip.AddrPort][]uint64{}
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		if err := readProcNet(f, out); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return out, nil
}

// readProcNet adds the sockets of one /proc/net/udp* table: the local
// address is column 2 (hex address in host byte order per 32-bit word,
// colon, hex port), the inode column 10.
func readProcNet(path string, out map[netip.AddrPort][]uint64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		local, ok := parseProcAddr(fields[1])
		inode, err := strconv.ParseUint(fields[9], 10, 64)
		if !ok || err != nil {
			continue
		}
		out[local] = append(out[local], inode)
	}
	return sc.Err()
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

// handOver takes each of socks that another socket (not one of socks)
// shares an address with out of the kernel's choice: connected to its own
// address, it only takes datagrams from there, which no client sends, and
// keeps what its queue already holds. It returns the sockets it took out.
func handOver(socks []socket, bound map[netip.AddrPort][]uint64) []socket {
	ours := map[uint64]bool{}
	for _, s := range socks {
		ours[s.inode] = true
	}
	var done []socket
	for _, s := range socks {
		if !hasPeer(s, bound, ours) {
			continue
		}
		if err := connectSelf(s); err != nil {
			log.Warningf("could not hand %s over: %v", s.local, err)
			continue
		}
		done = append(done, s)
	}
	return done
}

// hasPeer tells whether a socket that is not ours is bound to s's address.
func hasPeer(s socket, bound map[netip.AddrPort][]uint64, ours map[uint64]bool) bool {
	for _, inode := range bound[s.local] {
		if !ours[inode] {
			return true
		}
	}
	return false
}

func connectSelf(s socket) error {
	var sa unix.Sockaddr
	if s.local.Addr().Is4() {
		sa = &unix.SockaddrInet4{Addr: s.local.Addr().As4(), Port: int(s.local.Port())}
	} else {
		sa = &unix.SockaddrInet6{Addr: s.local.Addr().As16(), Port: int(s.local.Port())}
	}
	err := unix.Connect(s.fd, sa)
	if errors.Is(err, syscall.EINTR) {
		err = unix.Connect(s.fd, sa)
	}
	return err
}
