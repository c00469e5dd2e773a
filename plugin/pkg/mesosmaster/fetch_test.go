package mesosmaster

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestFetchLeader: the leader answers; the next Fetch reads the same
// state into the same wire buffer, and says it is unchanged.
func TestFetchLeader(t *testing.T) {
	leader := serveMaster(t, leading)
	c := newClient(t, Config{Masters: []string{leader.addr}})
	var body []byte
	res, err := c.Fetch(context.Background(), keepBody(&body))
	if err != nil {
		t.Fatal(err)
	}
	if res.Master != leader.addr || res.Failures != nil {
		t.Errorf("Master, Failures = %s, %v; want %s, nil", res.Master, res.Failures, leader.addr)
	}
	if want := string(stateJSON(leader.addr, leader.addr, 0)); string(body) != want {
		t.Errorf("Body = %s, want %s", body, want)
	}
	first := unsafe.SliceData(c.wire.parts[0])
	body = nil
	res, err = c.Fetch(context.Background(), keepBody(&body))
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(c.wire.parts[0]) != first || !res.Unchanged || body != nil {
		t.Errorf("second Fetch: a new wire buffer %t, unchanged %t, body %d bytes; want the same buffer, unchanged, no body",
			unsafe.SliceData(c.wire.parts[0]) != first, res.Unchanged, len(body))
	}
}

// TestFetchRedirect: a master that does not lead redirects to the leader,
// scheme-relative as Mesos does or as a full URL, and the credentials
// follow across the hosts.
func TestFetchRedirect(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("dns:s3cret"))
	for name, location := range map[string]func(leader string) string{
		"scheme-relative": func(leader string) string { return "//" + leader + statePath },
		"full URL":        func(leader string) string { return "http://" + leader + statePath },
	} {
		t.Run(name, func(t *testing.T) {
			leader := serveMaster(t, leading)
			leader.requireAuth(basic)
			follower := serveMaster(t, redirectTo(func() string { return location(leader.addr) }))
			follower.requireAuth(basic)
			c := newClient(t, Config{
				Masters:             []string{follower.addr, leader.addr},
				Auth:                Auth{Basic: &BasicAuth{Principal: "dns", Secret: "s3cret"}},
				InsecureCredentials: true,
			})
			res, err := c.Fetch(context.Background(), checkState)
			if err != nil {
				t.Fatal(err)
			}
			if res.Master != leader.addr || follower.hits.Load() != 1 || leader.hits.Load() != 1 {
				t.Errorf("Master %s, hits follower %d leader %d; want %s, 1, 1",
					res.Master, follower.hits.Load(), leader.hits.Load(), leader.addr)
			}
			// The leader found is asked first next time.
			if _, err := c.Fetch(context.Background(), checkState); err != nil {
				t.Fatal(err)
			}
			if follower.hits.Load() != 1 {
				t.Errorf("the second Fetch asked the follower again")
			}
		})
	}
}

// TestFetchFailover: each way a candidate can fail sends Fetch on to the
// next, and Result.Failures says why.
func TestFetchFailover(t *testing.T) {
	errBadState := errors.New("state without frameworks")
	tests := []struct {
		name  string
		bad   func(t *testing.T) string
		check func(bad string) CheckFunc
		want  error  // in Failures, with errors.Is
		text  string // in Failures
	}{
		{name: "503", bad: func(t *testing.T) string { return serveMaster(t, answer(503)).addr }, want: ErrNoLeader},
		{name: "refused", bad: refusedAddr, want: syscall.ECONNREFUSED},
		{name: "hangs", bad: hangingAddr, want: context.DeadlineExceeded},
		{name: "trickles", bad: func(t *testing.T) string { return serveMaster(t, trickle).addr }, want: context.DeadlineExceeded, text: "read state"},
		{name: "500", bad: func(t *testing.T) string { return serveMaster(t, answer(500)).addr }, text: "500 Internal Server Error"},
		{
			name: "check fails",
			bad:  func(t *testing.T) string { return serveMaster(t, leading).addr },
			check: func(bad string) CheckFunc {
				return func(body io.Reader, master string) (string, error) {
					if master == bad {
						return "", errBadState
					}
					return checkState(body, master)
				}
			},
			want: errBadState,
		},
		{
			name: "oversize, Content-Length",
			bad: func(t *testing.T) string {
				return serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, _ *http.Request) {
					body := stateJSON(m.addr, m.addr, 4096)
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
					_, _ = w.Write(body)
				}).addr
			},
			want: ErrBodyTooLarge,
			text: "Content-Length",
		},
		{
			name: "oversize, chunked",
			bad: func(t *testing.T) string {
				return serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, _ *http.Request) {
					w.(http.Flusher).Flush() // no Content-Length: chunked
					_, _ = w.Write(stateJSON(m.addr, m.addr, 4096))
				}).addr
			},
			want: ErrBodyTooLarge,
			text: "more than 2048 bytes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.bad(t)
			leader := serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write(stateJSON(m.addr, m.addr, 1024))
			})
			c := newClient(t, Config{Masters: []string{bad, leader.addr}, Timeout: 300 * time.Millisecond, MaxBodySize: 2048})
			check := checkState
			if tt.check != nil {
				check = tt.check(bad)
			}
			begin := time.Now()
			res, err := c.Fetch(context.Background(), check)
			if err != nil {
				t.Fatal(err)
			}
			if res.Master != leader.addr {
				t.Errorf("Master = %s, want %s", res.Master, leader.addr)
			}
			if tt.want != nil && !errors.Is(res.Failures, tt.want) {
				t.Errorf("Failures = %v, want %v", res.Failures, tt.want)
			}
			mustContainAll(t, "Failures", errString(res.Failures), "master "+bad, tt.text)
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("Fetch took %s", took)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFetchAllFail: the error names every candidate and its failure.
func TestFetchAllFail(t *testing.T) {
	noLeader := serveMaster(t, answer(503))
	refused, hanging := refusedAddr(t), hangingAddr(t)
	c := newClient(t, Config{Masters: []string{noLeader.addr, refused, hanging}, Timeout: 200 * time.Millisecond})
	_, err := c.Fetch(context.Background(), checkState)
	if err == nil {
		t.Fatal("Fetch succeeded")
	}
	for _, want := range []error{ErrNoLeader, syscall.ECONNREFUSED, context.DeadlineExceeded} {
		if !errors.Is(err, want) {
			t.Errorf("error %v: not %v", err, want)
		}
	}
	mustContainAll(t, "error", err.Error(), "master "+noLeader.addr, "master "+refused, "master "+hanging)
}

// TestFetchContextCancelled: the caller's context ends the Fetch.
func TestFetchContextCancelled(t *testing.T) {
	c := newClient(t, Config{Masters: []string{hangingAddr(t), hangingAddr(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := c.Fetch(ctx, checkState)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 2*time.Second {
		t.Errorf("Fetch = %v after %s, want the context's deadline at once", err, time.Since(begin))
	}
}

// TestFetchOldFollower: a master from before Mesos 1.0 serves its own state
// without redirecting; the state names the leader, which is asked once.
func TestFetchOldFollower(t *testing.T) {
	leader := serveMaster(t, leading)
	follower := serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(stateJSON(m.addr, leader.addr, 0))
	})
	c := newClient(t, Config{Masters: []string{follower.addr, leader.addr}})
	res, err := c.Fetch(context.Background(), checkState)
	if err != nil {
		t.Fatal(err)
	}
	if res.Master != leader.addr || leader.hits.Load() != 1 {
		t.Errorf("Master = %s after %d hits at the leader, want %s after 1", res.Master, leader.hits.Load(), leader.addr)
	}

	// A leader that names yet another master is not followed further.
	gone := refusedAddr(t)
	confused := serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(stateJSON(m.addr, follower.addr, 0))
	})
	c = newClient(t, Config{Masters: []string{confused.addr, gone, follower.addr}})
	_, err = c.Fetch(context.Background(), checkState)
	if !errors.Is(err, ErrNotLeader) {
		t.Errorf("Fetch = %v, want %v", err, ErrNotLeader)
	}
}

// TestFetchLeaderByName: a master asked by name whose state names it by IP
// is the leader; no second fetch.
func TestFetchLeaderByName(t *testing.T) {
	leader := serveMaster(t, leading)
	port := leader.addr[strings.LastIndexByte(leader.addr, ':')+1:]
	c := newClient(t, Config{Masters: []string{"localhost:" + port}})
	res, err := c.Fetch(context.Background(), checkState)
	if err != nil {
		t.Fatal(err)
	}
	if res.Master != "localhost:"+port || leader.hits.Load() != 1 {
		t.Errorf("Master = %s after %d fetches, want localhost:%s after 1", res.Master, leader.hits.Load(), port)
	}
}

// TestFetchRedirectLoop: masters pointing at each other end in an error.
func TestFetchRedirectLoop(t *testing.T) {
	var a, b *fakeMaster
	a = serveMaster(t, redirectTo(func() string { return "//" + b.addr + statePath }))
	b = serveMaster(t, redirectTo(func() string { return "//" + a.addr + statePath }))
	c := newClient(t, Config{Masters: []string{a.addr, b.addr}})
	_, err := c.Fetch(context.Background(), checkState)
	if !errors.Is(err, ErrTooManyRedirects) {
		t.Errorf("Fetch = %v, want %v", err, ErrTooManyRedirects)
	}
	// Each of the two candidates is followed maxHops times.
	if hits := a.hits.Load() + b.hits.Load(); hits != 2*(1+maxHops) {
		t.Errorf("%d requests, want %d", hits, 2*(1+maxHops))
	}
}

// TestReadBodyReuse: bodies of varying sizes, with and without a
// Content-Length, land in parts of partSize that are reused, added only
// when a body needs more, and let go when a state shrank.
func TestReadBodyReuse(t *testing.T) {
	size, serial := 100<<10, 0
	chunked := false
	m := serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, _ *http.Request) {
		serial++ // a new state each time: none is Unchanged
		body := stateJSON(m.addr, m.addr, size)
		copy(body[len(body)-10:], fmt.Sprintf("%08d", serial))
		if chunked {
			w.(http.Flusher).Flush()
		} else {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		_, _ = w.Write(body)
	})
	c := newClient(t, Config{Masters: []string{m.addr}})
	var parts []int
	var firsts []*byte
	for _, step := range []struct {
		size    int
		chunked bool
	}{{100 << 10, false}, {50 << 10, true}, {100 << 10, true}, {600 << 10, true}, {200, false}} {
		size, chunked = step.size, step.chunked
		var body []byte
		res, err := c.Fetch(context.Background(), keepBody(&body))
		if err != nil {
			t.Fatal(err)
		}
		if len(body) != size || res.Unchanged || c.wire.n != int64(size) {
			t.Fatalf("body of %d bytes (unchanged %t, wire %d), want %d", len(body), res.Unchanged, c.wire.n, size)
		}
		parts = append(parts, len(c.wire.parts))
		firsts = append(firsts, unsafe.SliceData(c.wire.parts[0]))
	}
	// The first body sized one part to its length (and a byte); the
	// chunked ones reuse it and add parts of partSize only past it: none
	// up to 100 KiB, two for 600 KiB; the 200-byte one needs only the
	// first, and the others are let go.
	if want := []int{1, 1, 1, 3, 1}; !slices.Equal(parts, want) {
		t.Errorf("parts %v, want %v", parts, want)
	}
	for i, p := range firsts {
		if p != firsts[0] {
			t.Errorf("fetch %d: a new first part, want the first one reused", i)
		}
	}
}

// TestFetchUnchanged: the same bytes as the state last accepted from a
// master are neither decompressed nor checked again; other bytes are. A
// gzipped state (as a master sends one to a client that takes gzip) is
// decompressed for check, and recognised unchanged by its compressed
// bytes.
func TestFetchUnchanged(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprint("gzip=", gz), func(t *testing.T) {
			var version atomic.Int32
			m := serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, r *http.Request) {
				body := stateJSON(m.addr, m.addr, 4000+int(version.Load()))
				if gz {
					if r.Header.Get("Accept-Encoding") != "gzip" {
						t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
					}
					var b bytes.Buffer
					zw := gzip.NewWriter(&b)
					_, _ = zw.Write(body)
					_ = zw.Close()
					w.Header().Set("Content-Encoding", "gzip")
					body = b.Bytes()
				}
				_, _ = w.Write(body)
			})
			c := newClient(t, Config{Masters: []string{m.addr}})
			checks := 0
			var body []byte
			check := func(r io.Reader, master string) (string, error) {
				checks++
				leader, err := keepBody(&body)(r, master)
				if !bytes.HasPrefix(body, []byte(`{"pid"`)) {
					t.Errorf("check got %q…, not the state", body[:min(len(body), 20)])
				}
				return leader, err
			}
			for i, want := range []struct {
				version   int32
				unchanged bool
				checks    int
			}{{0, false, 1}, {0, true, 1}, {0, true, 1}, {1, false, 2}, {1, true, 2}} {
				version.Store(want.version)
				body = nil
				res, err := c.Fetch(context.Background(), check)
				if err != nil {
					t.Fatal(err)
				}
				if res.Unchanged != want.unchanged || (body == nil) != want.unchanged || checks != want.checks {
					t.Errorf("fetch %d: unchanged %t, body %d bytes, %d checks; want %t and %d checks",
						i, res.Unchanged, len(body), checks, want.unchanged, want.checks)
				}
			}
		})
	}
}

// TestFetchBadGzip: a body that claims gzip and is not is a bad state:
// the next master is asked.
func TestFetchBadGzip(t *testing.T) {
	bad := serveMaster(t, func(_ *fakeMaster, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write([]byte("not gzip at all"))
	})
	good := serveMaster(t, leading)
	c := newClient(t, Config{Masters: []string{bad.addr, good.addr}})
	res, err := c.Fetch(context.Background(), checkState)
	if err != nil || res.Master != good.addr || !strings.Contains(fmt.Sprint(res.Failures), "gunzip") {
		t.Errorf("Fetch = %s, %v (failures %v); want %s after a gunzip failure", res.Master, err, res.Failures, good.addr)
	}
}

// TestFetchStopped: Fetch fails after Stop.
func TestFetchStopped(t *testing.T) {
	c := newClient(t, Config{Masters: []string{"127.0.0.1:1"}})
	c.Stop()
	if _, err := c.Fetch(context.Background(), checkState); !errors.Is(err, ErrStopped) {
		t.Errorf("Fetch after Stop = %v, want %v", err, ErrStopped)
	}
}

// TestRedirectTarget covers the Location forms and the refusals.
func TestRedirectTarget(t *testing.T) {
	tests := []struct {
		from, location, want, err string
	}{
		{"http://m1:5050/master/state", "//m2:5050/master/state", "http://m2:5050/master/state", ""},
		{"https://m1:5050/master/state", "//m2:5050/master/state", "https://m2:5050/master/state", ""},
		{"http://m1:5050/master/state", "https://m2:5050/master/state", "https://m2:5050/master/state", ""},
		{"http://m1:5050/master/state", "/master/state", "http://m1:5050/master/state", ""},
		{"https://m1:5050/master/state", "http://m2:5050/master/state", "", "leaves https"},
		{"http://m1:5050/master/state", "ftp://m2/x", "", "not http"},
		{"http://m1:5050/master/state", "", "", "without a Location"},
	}
	for _, tt := range tests {
		from := mustParse(t, tt.from)
		resp := &http.Response{Status: "307 Temporary Redirect", Header: http.Header{}}
		if tt.location != "" {
			resp.Header.Set("Location", tt.location)
		}
		got, err := redirectTarget(from, resp)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s -> %q: %v, want an error with %q", tt.from, tt.location, err, tt.err)
			}
		case err != nil || got.String() != tt.want:
			t.Errorf("%s -> %q: %v, %v; want %s", tt.from, tt.location, got, err, tt.want)
		}
	}
}

// TestFetchSlowLeaderOnce: a leader that hangs past the timeout is waited
// for once per Fetch, not again when a follower redirects to it.
func TestFetchSlowLeaderOnce(t *testing.T) {
	slow := serveMaster(t, func(_ *fakeMaster, _ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	follower := serveMaster(t, redirectTo(func() string { return "//" + slow.addr + statePath }))
	c := newClient(t, Config{Masters: []string{slow.addr, follower.addr}, Timeout: 300 * time.Millisecond})
	begin := time.Now()
	_, err := c.Fetch(context.Background(), checkState)
	took := time.Since(begin)
	if !errors.Is(err, ErrAskedBefore) {
		t.Errorf("Fetch = %v, want the redirect to the slow leader refused as %v", err, ErrAskedBefore)
	}
	if slow.hits.Load() != 1 || took > 550*time.Millisecond {
		t.Errorf("the slow leader was asked %d times in %s, want once, one timeout", slow.hits.Load(), took.Round(time.Millisecond))
	}
}
