package watchcache

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestLimitsApplied: the client gets the limits set, the defaults for the
// rest.
func TestLimitsApplied(t *testing.T) {
	for _, tc := range []struct {
		limits     *Limits
		qps        float32
		burst      int
		wrapsCalls bool
	}{
		{nil, defaultQPS, defaultBurst, false},
		{&Limits{QPS: 5}, 5, defaultBurst, false},
		{&Limits{Burst: 7, MaxInflight: 2}, defaultQPS, 7, true},
	} {
		rc, err := Config{Endpoint: "https://127.0.0.1:1", Limits: tc.limits}.restConfig()
		if err != nil {
			t.Fatal(err)
		}
		if rc.QPS != tc.qps || rc.Burst != tc.burst || (rc.WrapTransport != nil) != tc.wrapsCalls {
			t.Errorf("%+v: qps %v burst %d wrapped %t", tc.limits, rc.QPS, rc.Burst, rc.WrapTransport != nil)
		}
	}
	if (Config{Limits: &Limits{QPS: 5}}).key() == (Config{}).key() {
		t.Error("limits do not tell connections apart")
	}
}

type blockingTransport struct{ release chan struct{} }

func (b blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-b.release
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// TestInflightLimit: a call waits while the limit's calls are in flight,
// gives up with its context, and proceeds once a slot is free.
func TestInflightLimit(t *testing.T) {
	next := blockingTransport{release: make(chan struct{})}
	l := newInflightLimit(next, 1)
	first := make(chan error, 1)
	go func() {
		_, err := l.RoundTrip(httpRequest(t, context.Background()))
		first <- err
	}()
	for len(l.slots) == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.RoundTrip(httpRequest(t, ctx)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second call while the first is in flight: %v, want it to wait and time out", err)
	}
	close(next.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := l.RoundTrip(httpRequest(t, context.Background())); err != nil {
		t.Fatalf("after the first call ended: %v", err)
	}
}

func httpRequest(t *testing.T, ctx context.Context) *http.Request {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:1/api", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
