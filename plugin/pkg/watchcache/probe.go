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
// each informer asks the API server's /readyz over its own client every
// probeInterval, without retries and with a short timeout: a failure says
// within seconds that the API server is out of reach.
const (
	probeInterval = 10 * time.Second
	probeTimeout  = 5 * time.Second
)

// readyzProbe returns a probe of /readyz through client, which is the
// informer's own so that it rides on the same connection as its watch.
// /readyz is open to every authenticated client (system:public-info-viewer).
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

// probeClient is the client whose connection the informer of k watches
// on: the custom resources' own, or the built-in types'.
func (c *Cache) probeClient(k Resources) rest.Interface {
	if k == ServiceImports {
		return c.mcs.MulticlusterV1alpha1().RESTClient()
	}
	return c.core.CoreV1().RESTClient()
}

// probeLoop runs probe every probeInterval until ctx ends and reports each
// outcome to s.
func (s *connState) probeLoop(ctx context.Context, probe func(context.Context) error) {
	t := time.NewTicker(probeInterval)
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
		s.probed(err)
	}
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
