package mesosmaster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// recorder is a loopback listener that is no master: it records whether
// anything reached it, and with which Authorization header.
type recorder struct {
	addr  string
	hits  atomic.Int32
	authz atomic.Pointer[string]
}

// startRecorder listens on host (another loopback address than the
// masters', where the system has it) at a free port, until t ends.
func startRecorder(t *testing.T, host string) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		v := req.Header.Get("Authorization")
		r.authz.Store(&v)
		leading(&fakeMaster{addr: r.addr}, w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// TestRedirectToUnknownHost: a master redirecting to a host that is
// neither configured nor named by ZooKeeper is not followed: the host
// gets no request and no credentials, the refusal is counted, and no
// message holds the secret (of the configuration or of the Location).
func TestRedirectToUnknownHost(t *testing.T) {
	const secret = "s3cret-basic"
	for name, location := range map[string]func(to string) string{
		"scheme-relative": func(to string) string { return "//" + to + statePath },
		"with userinfo":   func(to string) string { return "http://mallory:loc-s3cret@" + to + statePath },
	} {
		t.Run(name, func(t *testing.T) {
			logs := captureLog(t)
			stranger := startRecorder(t, "127.0.0.2")
			follower := serveMaster(t, redirectTo(func() string { return location(stranger.addr) }))
			var refused atomic.Int32
			c := newClient(t, Config{
				Masters:             []string{follower.addr},
				Auth:                Auth{Basic: &BasicAuth{Principal: "dns", Secret: secret}},
				InsecureCredentials: true,
				OnRedirectRefused:   func() { refused.Add(1) },
			})
			_, err := c.Fetch(context.Background(), checkState)
			if !errors.Is(err, ErrRedirectRefused) {
				t.Fatalf("Fetch = %v, want %v", err, ErrRedirectRefused)
			}
			if stranger.hits.Load() != 0 || stranger.authz.Load() != nil {
				t.Errorf("the unknown host got %d requests (Authorization %v), want none", stranger.hits.Load(), stranger.authz.Load())
			}
			if refused.Load() != 1 {
				t.Errorf("OnRedirectRefused called %d times, want 1", refused.Load())
			}
			for _, s := range []string{secret, "loc-s3cret"} {
				if strings.Contains(err.Error(), s) || strings.Contains(logs.String(), s) {
					t.Errorf("%q in the error or the log: %v\n%s", s, err, logs.String())
				}
			}
		})
	}
}

// TestRedirectToKnownMaster: the same redirect to a configured master is
// followed, with the credentials.
func TestRedirectToKnownMaster(t *testing.T) {
	known := startRecorder(t, "127.0.0.2")
	follower := serveMaster(t, redirectTo(func() string { return "//" + known.addr + statePath }))
	c := newClient(t, Config{
		Masters:             []string{follower.addr, known.addr},
		Auth:                Auth{Basic: &BasicAuth{Principal: "dns", Secret: "pw"}},
		InsecureCredentials: true,
	})
	if _, err := c.Fetch(context.Background(), checkState); err != nil {
		t.Fatal(err)
	}
	if got := known.authz.Load(); known.hits.Load() != 1 || got == nil || !strings.HasPrefix(*got, "Basic ") {
		t.Errorf("the known master got %d requests, Authorization %v; want 1 with the credentials", known.hits.Load(), got)
	}
}

// TestCredentialsOverHTTP: credentials over plain http are refused unless
// InsecureCredentials allows them; an IAM login endpoint over http too.
func TestCredentialsOverHTTP(t *testing.T) {
	basic := Auth{Basic: &BasicAuth{Principal: "dns", Secret: "pw"}}
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"basic over http", Config{Masters: []string{"m:5050"}, Auth: basic}, false},
		{"iam over http", Config{Masters: []string{"m:5050"}, Auth: Auth{IAM: &IAMAuth{ConfigFile: "f"}}}, false},
		{"basic over https", Config{Masters: []string{"m:5050"}, Auth: basic, Scheme: "https"}, true},
		{"basic over http, allowed", Config{Masters: []string{"m:5050"}, Auth: basic, InsecureCredentials: true}, true},
		{"no credentials over http", Config{Masters: []string{"m:5050"}}, true},
	} {
		err := tc.cfg.Validate()
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInsecureCredentials)) {
			t.Errorf("%s: Validate = %v, want ok %t", tc.name, err, tc.ok)
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	file := writeIAMConfig(t, key, "private_key", "http://iam-user:iam-s3cret@127.0.0.1:1/acs/api/v1/auth/login")
	_, err = New(Config{Masters: []string{"m:5050"}, Scheme: "https", Auth: Auth{IAM: &IAMAuth{ConfigFile: file}}})
	if !errors.Is(err, ErrInsecureCredentials) || strings.Contains(err.Error(), "iam-s3cret") || strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("IAM login over http: New = %v, want %v without the secrets", err, ErrInsecureCredentials)
	}
}

// TestRedactZK: the credentials of a zk:// URL never show, whatever
// characters the password holds.
func TestRedactZK(t *testing.T) {
	for in, want := range map[string]string{
		"zk://user:secret@10.0.0.1:2181,10.0.0.2/mesos": "zk://xxxxx@10.0.0.1:2181,10.0.0.2/mesos",
		"zk://user:se/cret@10.0.0.1:2181/mesos":         "zk://xxxxx@10.0.0.1:2181/mesos",
		"zk://user:se@cret@10.0.0.1:2181/mesos":         "zk://xxxxx@10.0.0.1:2181/mesos",
		"zk://10.0.0.1:2181/mesos":                      "zk://10.0.0.1:2181/mesos",
	} {
		if got := RedactZK(in); got != want {
			t.Errorf("RedactZK(%q) = %q, want %q", in, got, want)
		}
	}
}
