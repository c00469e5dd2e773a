// Package listeners finds this process's UDP listening sockets: the ones
// CoreDNS bound for its servers. handover takes them out of the kernel's
// choice at shutdown; clusterfirst reads their queues and, under overload,
// filters them. Both must touch only the server's own listeners, and only
// while the descriptor still names the socket it did when it was found.
package listeners

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Socket is one of this process's bound, unconnected UDP sockets with
// SO_REUSEPORT.
type Socket struct {
	FD    int
	Inode uint64
	Local netip.AddrPort
}

// Own lists this process's listeners: bound, unconnected UDP sockets with
// SO_REUSEPORT, which is how CoreDNS listens (an upstream's socket is
// connected, and has no SO_REUSEPORT).
func Own() ([]Socket, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	var out []Socket
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, ok := Inspect(fd); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// Inspect tells whether fd is a listener: a UDP socket, SO_REUSEPORT,
// bound, not connected.
func Inspect(fd int) (Socket, bool) {
	inode, ok := fdInode(fd)
	if !ok {
		return Socket{}, false
	}
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_DGRAM {
		return Socket{}, false
	}
	if rp, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT); err != nil || rp == 0 {
		return Socket{}, false
	}
	if _, err := unix.Getpeername(fd); err == nil {
		return Socket{}, false // connected: not a listener
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return Socket{}, false
	}
	local, ok := addrPort(sa)
	if !ok || local.Port() == 0 {
		return Socket{}, false
	}
	return Socket{FD: fd, Inode: inode, Local: local}, true
}

// StillOurs tells whether s.FD still refers to the socket it did: the
// server closes its listeners at the end of the lameduck (and a reload may
// close them), and the number may then name another socket (an
// upstream's), which must not be touched. It costs one fstat.
func (s Socket) StillOurs() bool {
	var st unix.Stat_t
	if err := unix.Fstat(s.FD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return false
	}
	return st.Ino == s.Inode
}

// fdInode is the inode of the socket fd refers to, if it is a socket.
func fdInode(fd int) (uint64, bool) {
	link, err := os.Readlink(filepath.Join("/proc/self/fd", strconv.Itoa(fd)))
	if err != nil || !strings.HasPrefix(link, "socket:[") {
		return 0, false
	}
	inode, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
	return inode, err == nil
}

func addrPort(sa unix.Sockaddr) (netip.AddrPort, bool) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), true // #nosec G115 -- a port
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port)), true // #nosec G115 -- a port
	}
	return netip.AddrPort{}, false
}
