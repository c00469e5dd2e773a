package mesosmaster

import (
	"bytes"
	"encoding/json"
	"io"
	golog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeMaster is a master on loopback whose handler knows its own address.
type fakeMaster struct {
	addr string
	srv  *httptest.Server
	hits atomic.Int32
	auth atomic.Pointer[string] // the Authorization value required, when set
}

// serveMaster starts a fake master with handler h, closed when t ends.
func serveMaster(t *testing.T, h func(m *fakeMaster, w http.ResponseWriter, r *http.Request)) *fakeMaster {
	t.Helper()
	m := &fakeMaster{}
	m.srv = httptest.NewServer(m.handler(h))
	m.addr = m.srv.Listener.Addr().String()
	t.Cleanup(m.srv.Close)
	return m
}

// handler counts the request and checks the Authorization header first.
func (m *fakeMaster) handler(h func(m *fakeMaster, w http.ResponseWriter, r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.hits.Add(1)
		if want := m.auth.Load(); want != nil && r.Header.Get("Authorization") != *want {
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != statePath {
			http.NotFound(w, r)
			return
		}
		h(m, w, r)
	})
}

// requireAuth makes the master answer 401 to any other Authorization.
func (m *fakeMaster) requireAuth(value string) { m.auth.Store(&value) }

// stateJSON is a state of a master at self that names leader ("" none),
// padded to about size bytes.
func stateJSON(self, leader string, size int) []byte {
	s := struct {
		PID     string `json:"pid"`
		Leader  string `json:"leader,omitempty"`
		Padding string `json:"padding"`
	}{PID: "master@" + self}
	if leader != "" {
		s.Leader = "master@" + leader
	}
	b, _ := json.Marshal(s)
	s.Padding = strings.Repeat("x", max(0, size-len(b)))
	b, _ = json.Marshal(s)
	return b
}

// leading serves a state in which the master leads.
func leading(m *fakeMaster, w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(stateJSON(m.addr, m.addr, 0))
}

// redirectTo answers 307 to location, as a master that does not lead.
func redirectTo(location func() string) func(*fakeMaster, http.ResponseWriter, *http.Request) {
	return func(_ *fakeMaster, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", location())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}
}

// answer replies code with a short message.
func answer(code int) func(*fakeMaster, http.ResponseWriter, *http.Request) {
	return func(_ *fakeMaster, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, http.StatusText(code), code)
	}
}

// checkState is the caller's check: it decodes the state and names its
// leader.
func checkState(body io.Reader, _ string) (string, error) {
	var s struct {
		Leader string `json:"leader"`
	}
	if err := json.NewDecoder(body).Decode(&s); err != nil {
		return "", err
	}
	return s.Leader, nil
}

// keepBody is a check that keeps the body it reads in *got.
func keepBody(got *[]byte) CheckFunc {
	return func(body io.Reader, master string) (string, error) {
		b, err := io.ReadAll(body)
		if err != nil {
			return "", err
		}
		*got = b
		return checkState(bytes.NewReader(b), master)
	}
}

// newClient makes a client stopped when t ends.
func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// hangingAddr accepts connections and never answers on them.
func hangingAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// trickle sends a 200 and then a byte every 20ms, never finishing.
func trickle(_ *fakeMaster, w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	for {
		if _, err := w.Write([]byte(" ")); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// syncBuffer is a log destination safe to read while written.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureLog sends the process's log (CoreDNS's logs through the standard
// library's) to a buffer until t ends.
func captureLog(t *testing.T) *syncBuffer {
	b := &syncBuffer{}
	golog.SetOutput(b)
	t.Cleanup(func() { golog.SetOutput(os.Stderr) })
	return b
}

// goroutines returns the stacks of the goroutines whose stack contains any
// of marks.
func goroutines(marks ...string) []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		for _, mark := range marks {
			if strings.Contains(g, mark) {
				found = append(found, g)
				break
			}
		}
	}
	return found
}

// Marks of the goroutines a client runs: its own, its ZooKeeper session's,
// and its HTTP connections'.
const (
	markOwn  = "plugin/pkg/mesosmaster.("
	markZK   = "github.com/go-zookeeper/zk."
	markConn = "net/http.(*persistConn)"
)

// waitGoroutines waits until at most n goroutines carry one of marks, and
// fails t with their stacks if that takes over 10 seconds.
func waitGoroutines(t *testing.T, n int, marks ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := goroutines(marks...)
		if len(left) <= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of %v left, want at most %d:\n%s", len(left), marks, n, strings.Join(left, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventually polls cond every 20ms for up to d, failing t with what if it
// never holds.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustContainAll fails t unless s contains every one of subs.
func mustContainAll(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s = %q, want it to contain %q", what, s, sub)
		}
	}
}

// mustParse parses a URL of the test's own.
func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
