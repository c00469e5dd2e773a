package hold

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/coredns/coredns/plugin/forward"
	"github.com/coredns/coredns/plugin/pkg/proxy"
)

// failure says what a try's error tells about the query it sent.
type failure int

const (
	// other: an error hold does not ride out (a timeout, a canceled
	// context, a reply that did not parse): the query fails as it is.
	other failure = iota
	// unsent: no upstream can have read the query (the connection was
	// refused, the host or network is unreachable, every upstream is
	// marked down), so sending it again costs the upstream nothing.
	unsent
	// lost: the connection broke after the query was written (reset,
	// closed, a broken pipe), so a replica may have read it and died of
	// it; it is sent again once at most.
	lost
)

// classify sorts err, as forward and gensearchpath return it (a
// *net.OpError around an *os.SyscallError, wrapped with %w), into a
// failure. forward's own attempts (max_connect_attempts) happen inside one
// try and it returns the last error only: a reset on its first attempt
// followed by a refused connect on its second is seen as unsent.
func classify(err error) failure {
	switch {
	case err == nil, timedOut(err):
		return other
	case isAny(err, notSent):
		return unsent
	case !isAny(err, brokenAfterWrite):
		return other
	case isDial(err):
		// A reset while connecting: the query had not been written.
		return unsent
	}
	return lost
}

// notSent are the errors of a query that reached no upstream. ECONNREFUSED
// over TCP comes from connect; over UDP it is an ICMP port unreachable, so
// the datagram was not taken by any socket either. Unreachable hosts and
// networks never got the packet.
var notSent = []error{
	syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
	forward.ErrNoHealthy, proxy.ErrNoHealthy,
}

// brokenAfterWrite are the errors of a connection that broke with the
// query written to it: a replica may have read it. A kept connection the
// peer closed (ErrCachedClosed: the read after the write saw EOF) is one
// too: CoreDNS takes it for a peer that closed before the query came, but
// a replica that read the query and exited closes it the same way.
var brokenAfterWrite = []error{
	syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	io.EOF, io.ErrUnexpectedEOF,
	forward.ErrCachedClosed, proxy.ErrCachedClosed,
}

func timedOut(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func isAny(err error, targets []error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// isDial reports whether err happened while connecting.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
