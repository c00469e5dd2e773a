package handover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Readiness each process answers for itself. Two pods on the host
// network share every port, and the ready plugin listens with
// SO_REUSEPORT: an HTTP probe of 169.254.20.10:8181 reaches whichever
// pod's listener the kernel picks, so a new pod that never gets ready can
// be marked Ready by the old one's answer. Here the process serves a unix
// socket in its pod's own volume (an emptyDir), which no other pod sees;
// asked there, it asks the ready plugin's address over TCP and keeps only
// an answer whose server-side connection is one of its own file
// descriptors, trying new connections (new source ports, so new picks of
// the kernel) until one is. `coredns -handover-probe SOCKET`, a kubelet
// exec probe, asks the socket.

// How hard a check tries: with two processes on the port, 16 connections
// all land on the other one with odds 2^-16.
const (
	selfTries   = 16
	selfTimeout = 1500 * time.Millisecond
	// readyMsg is the whole reply of a ready process; anything else is
	// the reason it is not.
	readyMsg = "ready"
)

// errNotMine: every connection to the ready address reached another
// process.
var errNotMine = errors.New("no answer from this process's own ready listener")

// selfReady serves this process's readiness on a unix socket.
type selfReady struct {
	path, addr string
	// owns tells whether a socket inode is one of this process's
	// (ownsInode; tests serve both sides from one process).
	owns func(uint64) bool

	mu sync.Mutex
	ln *net.UnixListener
	// check allows one check at a time: another asker meanwhile is told
	// so at once (kubelet asks one at a time; a flood costs one check and
	// holds no goroutine).
	check sync.Mutex
}

// start listens on the socket path, replacing a socket left there by a
// previous instance (a reload starts the new instance before the old one
// closes its listener).
func (s *selfReady) start() error {
	if fi, err := os.Lstat(s.path); err == nil && fi.Mode().Type() == fs.ModeSocket {
		os.Remove(s.path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: s.path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("handover: self_ready: %w", err)
	}
	// The file belongs to whichever instance listened last.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(s.path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("handover: self_ready: %w", err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	go s.serve(ln)
	return nil
}

func (s *selfReady) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	err := s.ln.Close()
	s.ln = nil
	return err
}

func (s *selfReady) serve(ln *net.UnixListener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.answer(c)
	}
}

func (s *selfReady) answer(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * selfTimeout))
	msg := "busy: another readiness check is running"
	if s.check.TryLock() {
		msg = readyMsg
		if err := s.ready(); err != nil {
			msg = err.Error()
		}
		s.check.Unlock()
	}
	io.WriteString(c, msg+"\n")
}

// ready asks the ready address until this process's own listener
// answers, and returns nil if that answer is 200.
func (s *selfReady) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), selfTimeout)
	defer cancel()
	for range selfTries {
		mine, status, err := s.askOnce(ctx)
		if err != nil {
			return err
		}
		if !mine {
			continue
		}
		if status != http.StatusOK {
			return fmt.Errorf("not ready: %s", status2text(status))
		}
		return nil
	}
	return errNotMine
}

func status2text(code int) string { return strconv.Itoa(code) + " " + http.StatusText(code) }

// askOnce sends one GET /ready on a new connection and tells whether this
// process served it, and the status.
func (s *selfReady) askOnce(ctx context.Context) (bool, int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return false, 0, fmt.Errorf("handover: self_ready: %w", err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	// HTTP/1.1 keeps the connection open after the reply, so its server
	// side is still a descriptor of the process that accepted it.
	if _, err := fmt.Fprintf(conn, "GET /ready HTTP/1.1\r\nHost: %s\r\nUser-Agent: coredns-handover-self-ready\r\n\r\n", s.addr); err != nil {
		return false, 0, fmt.Errorf("handover: self_ready: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false, 0, fmt.Errorf("handover: self_ready: %w", err)
	}
	resp.Body.Close()
	local := conn.LocalAddr().(*net.TCPAddr).AddrPort()
	remote := conn.RemoteAddr().(*net.TCPAddr).AddrPort()
	inode, err := tcpInode(remote, local)
	if err != nil {
		return false, 0, err
	}
	return inode != 0 && s.owns(inode), resp.StatusCode, nil
}

// tcpInode finds the TCP socket with this local and remote address in
// /proc/net/tcp and tcp6: the server side of our connection.
func tcpInode(local, remote netip.AddrPort) (uint64, error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	var found uint64
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		err := readProcNet(f, func(p procSocket) bool {
			if p.local == local && p.remote == remote {
				found = p.inode
				return false
			}
			return true
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
		if found != 0 {
			break
		}
	}
	return found, nil
}

// ownsInode tells whether one of this process's descriptors is the
// socket inode: /proc/self/fd, which a process may always read, even one
// its file capability made undumpable.
func ownsInode(inode uint64) bool {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	for _, e := range entries {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && link == want {
			return true
		}
	}
	return false
}

// ProbeFlag is the command-line flag of the binary that runs Probe.
const ProbeFlag = "-handover-probe"

// Probe asks the self_ready socket at path whether the process that
// serves it is ready: nil if it is, else why not. It is what the exec
// probe `coredns -handover-probe SOCKET` runs.
func Probe(path string, timeout time.Duration) error {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return fmt.Errorf("handover probe: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(io.LimitReader(c, 512)).ReadString('\n')
	if err != nil {
		return fmt.Errorf("handover probe: %w", err)
	}
	if line = strings.TrimSpace(line); line != readyMsg {
		return fmt.Errorf("handover probe: %s", line)
	}
	return nil
}

// ProbeMain runs the exec probe for args (the binary's arguments after
// its name) if they ask for it: `-handover-probe SOCKET`. It returns the
// exit code and whether it ran.
func ProbeMain(args []string, stderr io.Writer) (int, bool) {
	if len(args) != 2 || args[0] != ProbeFlag {
		return 0, false
	}
	if err := Probe(args[1], 2*selfTimeout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1, true
	}
	return 0, true
}
