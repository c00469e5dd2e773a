package mesosmaster

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

func start(t *testing.T, opts Options) *Master {
	t.Helper()
	m, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// get fetches path from m with c, returning the status, headers and body.
func get(t *testing.T, c *http.Client, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", url, err)
	}
	return resp, body
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

func TestLeaderServesState(t *testing.T) {
	gen := mesosstatetest.Generate(mesosstatetest.GenOptions{Seed: 1, Tasks: 20, Frameworks: 2, Agents: 3})
	m := start(t, Options{State: gen})
	for _, path := range []string{"/master/state", "/master/state.json"} {
		resp, body := get(t, noRedirect, m.URL()+path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %s, %q", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		s, err := mesosstate.Decode(body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if s.Leader != m.PID() || s.PID != m.PID() || s.LeaderInfo.Address.IP != "127.0.0.1" || len(s.Frameworks) != 2 {
			t.Fatalf("%s: leader %q, pid %q, %+v; want %q", path, s.Leader, s.PID, s.LeaderInfo.Address, m.PID())
		}
	}
	if gen.Leader != "master@10.0.0.1:5050" {
		t.Errorf("SetStateOf changed the caller's state: leader %q", gen.Leader)
	}
	if got := m.Requests(); got != 2 {
		t.Errorf("Requests() = %d, want 2", got)
	}
	if resp, _ := get(t, noRedirect, m.URL()+"/master/slaves"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another endpoint: %s", resp.Status)
	}
}

func TestMethods(t *testing.T) {
	m := start(t, Options{})
	resp, err := http.Post(m.URL()+"/master/state", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s", resp.Status)
	}
	resp, err = http.Head(m.URL() + "/master/state")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength <= 0 {
		t.Errorf("HEAD: %s, length %d", resp.Status, resp.ContentLength)
	}
}

// TestLeaderChange: three masters on three loopback addresses and one
// port, as three hosts; the non-leaders redirect, scheme-relative, to the
// leader, whichever it is.
func TestLeaderChange(t *testing.T) {
	m1 := start(t, Options{Listen: "127.0.0.2:0"})
	port := m1.Addr()[strings.LastIndexByte(m1.Addr(), ':'):]
	m2, err := Start(Options{Listen: "127.0.0.3" + port, Leader: m1.Addr()})
	if err != nil {
		t.Skipf("no second master on the same port (%v)", err)
	}
	t.Cleanup(m2.Close)
	m3 := start(t, Options{Listen: "127.0.0.4" + port, Leader: NoLeader})

	resp, _ := get(t, noRedirect, m2.URL()+"/master/state")
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "//"+m1.Addr()+"/master/state" {
		t.Fatalf("non-leader: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	resp, _ = get(t, noRedirect, m2.URL()+"/master/state.json")
	if loc := resp.Header.Get("Location"); loc != "//"+m1.Addr()+"/master/state.json" {
		t.Fatalf("non-leader, state.json: Location %q", loc)
	}
	// A client following the redirect gets the leader's state.
	resp, body := get(t, http.DefaultClient, m2.URL()+"/master/state")
	if s, err := mesosstate.Decode(body); resp.StatusCode != http.StatusOK || err != nil || s.Leader != m1.PID() {
		t.Fatalf("following the redirect: %s, %v", resp.Status, err)
	}
	if resp, _ := get(t, noRedirect, m3.URL()+"/master/state"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("no leader: %s", resp.Status)
	}

	// m2 is elected: m1 and m3 now redirect to it.
	m2.SetLeader(m2.Addr())
	m1.SetLeader(m2.Addr())
	m3.SetLeader(m2.Addr())
	for _, m := range []*Master{m1, m3} {
		resp, _ := get(t, noRedirect, m.URL()+"/master/state")
		if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "//"+m2.Addr()+"/master/state" {
			t.Fatalf("%s after the election: %s, Location %q", m.Addr(), resp.Status, resp.Header.Get("Location"))
		}
	}
	resp, body = get(t, noRedirect, m2.URL()+"/master/state")
	if s, err := mesosstate.Decode(body); resp.StatusCode != http.StatusOK || err != nil || s.Leader != m2.PID() || s.PID != m2.PID() {
		t.Fatalf("new leader: %s, %v", resp.Status, err)
	}
}

func TestSetStateRaw(t *testing.T) {
	m := start(t, Options{Body: []byte(`{"leader": "master@10.0.0.9:5050"}`)})
	_, body := get(t, noRedirect, m.URL()+"/master/state")
	if s, err := mesosstate.Decode(body); err != nil || s.Leader != "master@10.0.0.9:5050" {
		t.Fatalf("raw body: %v", err)
	}
	good := mesosstatetest.Marshal(mesosstatetest.Generate(mesosstatetest.GenOptions{Seed: 2, Tasks: 50, Frameworks: 2, Agents: 3}))
	for _, tc := range []struct {
		body []byte
		want error
	}{
		{good[:len(good)/2], mesosstate.ErrTruncated},
		{[]byte("<html>gateway</html>"), mesosstate.ErrMalformed},
		{append(bytes.Clone(good), "garbage"...), mesosstate.ErrTrailingData},
		{[]byte{}, mesosstate.ErrEmpty},
	} {
		m.SetState(tc.body)
		resp, body := get(t, noRedirect, m.URL()+"/master/state")
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, tc.body) {
			t.Fatalf("served %d bytes (%s), set %d", len(body), resp.Status, len(tc.body))
		}
		if _, err := mesosstate.Decode(body); !errors.Is(err, tc.want) {
			t.Fatalf("Decode = %v, want %v", err, tc.want)
		}
	}
}

// TestGzip: a client that accepts gzip gets a large state compressed, as
// from libprocess; a small one comes plain.
func TestGzip(t *testing.T) {
	gen := mesosstatetest.Generate(mesosstatetest.GenOptions{Seed: 3, Tasks: 30, Frameworks: 2, Agents: 3})
	m := start(t, Options{State: gen})
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	_, want := get(t, plain, m.URL()+"/master/state")
	for range 2 { // the second answer comes from the cache
		resp, body := get(t, plain, m.URL()+"/master/state", "Accept-Encoding", "gzip")
		if resp.Header.Get("Content-Encoding") != "gzip" || len(body) >= len(want) {
			t.Fatalf("Content-Encoding %q, %d bytes for %d", resp.Header.Get("Content-Encoding"), len(body), len(want))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("gunzipped: %d bytes, %v", len(got), err)
		}
	}
	resp, _ := get(t, plain, m.URL()+"/master/state", "Accept-Encoding", "gzip;q=0")
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	m.SetState([]byte(`{"leader": "master@10.0.0.9:5050"}`))
	if resp, _ := get(t, plain, m.URL()+"/master/state", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a small body was compressed")
	}
	// Go's client asks for gzip itself and unpacks it.
	m.SetStateOf(gen)
	if _, body := get(t, http.DefaultClient, m.URL()+"/master/state"); len(body) != len(want) {
		t.Errorf("default client: %d bytes, want %d", len(body), len(want))
	}
}

func TestDown(t *testing.T) {
	m := start(t, Options{})
	m.SetDelay(time.Second)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Get(m.URL() + "/master/state")
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for m.Requests() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := m.SetDown(true); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Error("a request open when the master went down succeeded")
	}
	if _, err := http.Get(m.URL() + "/master/state"); err == nil {
		t.Fatal("a down master answered")
	}
	m.SetDelay(0)
	if err := m.SetDown(false); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, noRedirect, m.URL()+"/master/state"); resp.StatusCode != http.StatusOK {
		t.Fatalf("back up: %s", resp.Status)
	}
	if err := m.SetDown(false); err != nil {
		t.Fatalf("up twice: %v", err)
	}
	m.Close()
	if err := m.SetDown(false); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetDown after Close = %v", err)
	}
}

func TestDelayAndStatus(t *testing.T) {
	m := start(t, Options{})
	m.SetDelay(300 * time.Millisecond)
	impatient := &http.Client{Timeout: 50 * time.Millisecond}
	if _, err := impatient.Get(m.URL() + "/master/state"); err == nil {
		t.Fatal("a slow master answered within the timeout")
	}
	begin := time.Now()
	if resp, _ := get(t, noRedirect, m.URL()+"/master/state"); resp.StatusCode != http.StatusOK || time.Since(begin) < 300*time.Millisecond {
		t.Fatalf("slow master: %s after %v", resp.Status, time.Since(begin))
	}
	m.SetDelay(0)
	m.SetStatus(http.StatusInternalServerError)
	if resp, _ := get(t, noRedirect, m.URL()+"/master/state"); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("SetStatus(500): %s", resp.Status)
	}
	m.SetStatus(0)
	if resp, _ := get(t, noRedirect, m.URL()+"/master/state"); resp.StatusCode != http.StatusOK {
		t.Fatalf("SetStatus(0): %s", resp.Status)
	}
	if got := m.Requests(); got != 4 {
		t.Errorf("Requests() = %d, want 4", got)
	}
}

func TestBasicAuth(t *testing.T) {
	m := start(t, Options{Principal: "dns", Secret: "s3cret", Leader: NoLeader})
	resp, _ := get(t, noRedirect, m.URL()+"/master/state")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credentials: %s, %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	for _, cred := range [][2]string{{"dns", "wrong"}, {"other", "s3cret"}, {"", ""}} {
		req, _ := http.NewRequest(http.MethodGet, m.URL()+"/master/state", nil)
		req.SetBasicAuth(cred[0], cred[1])
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("credentials %q: %s", cred, resp.Status)
		}
	}
	// Authentication comes first: a good login reaches the leader check.
	req, _ := http.NewRequest(http.MethodGet, m.URL()+"/master/state", nil)
	req.SetBasicAuth("dns", "s3cret")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("good credentials, no leader: %s", resp.Status)
	}
	m.SetLeader("")
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("good credentials: %s", resp.Status)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "localhost:0", ":0", "nonsense"} {
		if m, err := Start(Options{Listen: addr}); err == nil {
			m.Close()
			t.Errorf("Start on %q succeeded", addr)
		}
	}
	if _, err := Start(Options{Principal: "a", IAM: true}); !errors.Is(err, ErrAuthConflict) {
		t.Errorf("basic and IAM: %v", err)
	}
}

// TestConcurrentFaults: faults set while clients poll (run with -race).
func TestConcurrentFaults(t *testing.T) {
	m := start(t, Options{})
	body := mesosstatetest.Marshal(mesosstatetest.Generate(mesosstatetest.GenOptions{Seed: 4, Tasks: 40, Frameworks: 2, Agents: 4}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c := &http.Client{Timeout: time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if resp, err := c.Get(m.URL() + "/master/state"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	for i := range 50 {
		m.SetState(body[:len(body)-i])
		m.SetStatus([]int{0, 500}[i%2])
		m.SetLeader([]string{"", NoLeader, "127.0.0.9:5050"}[i%3])
		m.SetDelay(time.Duration(i%3) * time.Millisecond)
		if i%10 == 0 {
			_ = m.SetDown(true)
			_ = m.SetDown(false)
		}
	}
	close(stop)
	wg.Wait()
}
