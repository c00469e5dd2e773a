package watchcache

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
)

// A stalled connection (a proxy, load balancer or NAT that stops
// forwarding, a half-open TCP connection) fails no list or watch call: the
// watch just goes quiet, as it does in a quiet cluster, and client-go
// notices only after its HTTP/2 health check (about 45 s) and then its
// retries of the new connection's TLS handshake, minutes later. The soak's
// stalled proxy showed api_reachable at 1 through a whole minute of it. So
// the cache asks the API server's /readyz every probeInterval over the one
// connection its informers watch on, without retries and with a short
// timeout, and tells every informer the outcome: a failure says within
// seconds that the API server is out of reach. One probe per connection,
// not per informer: the answer is the same for all of them.
var probeInterval = 10 * time.Second // a variable for the tests

const probeTimeout = 5 * time.Second

// readyzProbe returns a probe of /readyz through client, which rides on the
// connection the informers watch on. /readyz is open to every
// authenticated client (system:public-info-viewer).
func readyzProbe(client rest.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		if err := client.Get().AbsPath("/readyz").MaxRetries(0).Do(ctx).Error(); err != nil {
			return fmt.Errorf("probe of /readyz: %w", err)
		}
		return nil
	}
}

// connProbe runs the connection's probe loop.
type connProbe struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startProbe probes the connection every probeInterval until stopped, and
// reports each outcome to every informer running then.
func (c *Cache) startProbe() *connProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &connProbe{cancel: cancel, done: make(chan struct{})}
	probe := readyzProbe(c.core.CoreV1().RESTClient())
	every := c.probeEvery
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := probe(ctx)
			if ctx.Err() != nil {
				return
			}
			for _, s := range c.connStates() {
				s.probed(err)
			}
		}
	}()
	return p
}

// stop ends the loop and waits for it.
func (p *connProbe) stop() {
	p.cancel()
	<-p.done
}

// connStates are the states of the informers running now.
func (c *Cache) connStates() []*connState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*connState, 0, len(c.informers))
	for _, inf := range c.informers {
		out = append(out, inf.state)
	}
	return out
}

// probed records a probe's outcome. A failure that reached nothing marks
// the resource unreachable; a success clears only what a probe set, since
// a failing list or watch says more about the resource than /readyz does.
func (s *connState) probed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil && !answered(err) && !s.down:
		s.probeDown = true
		s.setReachable(false, err)
	case err == nil && s.probeDown:
		s.probeDown = false
		s.setReachable(true, nil)
	}
}
