package apiserver

import (
	"fmt"
	"net"
	"sync"
)

// Proxy is a TCP proxy on loopback in front of the API server, through
// which the servers under test reach it, so that the soak can break their
// connections in ways that stopping the API server does not: reset every
// connection, or stop forwarding while the connections stay open (a stalled
// watch: nothing arrives and nothing fails).
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // both ends of every open pair
	stalled bool
	resume  chan struct{} // closed when a stall ends
}

// NewProxy listens on a loopback port of its own and forwards each
// connection to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is the address the servers under test dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting; open connections stay until either end closes.
func (p *Proxy) Close() error { return p.ln.Close() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// serve dials the API server for one client connection and copies both
// ways until either side closes.
func (p *Proxy) serve(client net.Conn) {
	p.wait()
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, upstream)
	var wg sync.WaitGroup
	wg.Go(func() { p.copy(upstream, client) })
	wg.Go(func() { p.copy(client, upstream) })
	wg.Wait()
	p.untrack(client, upstream)
}

// copy forwards src to dst, holding each chunk back while stalled.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	// Half-close would keep a stalled peer waiting; close both.
	dst.Close()
	src.Close()
}

// wait blocks while the proxy is stalled.
func (p *Proxy) wait() {
	p.mu.Lock()
	ch := p.resume
	stalled := p.stalled
	p.mu.Unlock()
	if stalled {
		<-ch
	}
}

func (p *Proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// Stall stops forwarding: connections stay open, bytes stop, new
// connections are accepted and wait.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled {
		p.stalled, p.resume = true, make(chan struct{})
	}
}

// Unstall forwards again what was held back.
func (p *Proxy) Unstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resume)
	}
}

// Reset closes every open connection with a TCP RST (linger 0), as a
// middlebox or a restarted load balancer would, and returns how many
// connection pairs it cut. A connection already closing by itself may
// refuse the linger option: that is no failure of the reset.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	n := len(p.conns) / 2
	clear(p.conns)
	return n
}
