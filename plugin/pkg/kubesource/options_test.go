package kubesource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/schemadns/schemadns/plugin/pkg/watchcache"
)

// controller is a Controller on a one-line Corefile, positioned so that
// its errors name line 1, as a plugin's parser would be.
func controller(t *testing.T) *caddy.Controller {
	t.Helper()
	c := caddy.NewTestController("dns", "kubeschema")
	c.Next()
	return c
}

// kubeconfig writes a valid kubeconfig with two contexts.
func kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: one
  context: {cluster: a, user: u}
- name: two
  context: {cluster: a, user: u}
current-context: one
`
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// file writes a readable file and returns its path.
func file(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseConnectionOption(t *testing.T) {
	kc := kubeconfig(t)
	cert, key, ca := file(t, "cert"), file(t, "key"), file(t, "ca")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name    string
		opt     string
		args    []string
		handled bool
		want    watchcache.Config // when no error
		err     string            // a part of the error, "" for none
	}{
		{"kubeconfig", "kubeconfig", []string{kc}, true, watchcache.Config{Kubeconfig: kc}, ""},
		{"kubeconfig and context", "kubeconfig", []string{kc, "two"}, true, watchcache.Config{Kubeconfig: kc, Context: "two"}, ""},
		{"kubeconfig without a file", "kubeconfig", nil, true, watchcache.Config{}, "Wrong argument count"},
		{"kubeconfig with three arguments", "kubeconfig", []string{kc, "two", "x"}, true, watchcache.Config{}, "Wrong argument count"},
		{"kubeconfig unreadable", "kubeconfig", []string{missing}, true, watchcache.Config{}, "unreadable file"},
		{"kubeconfig unknown context", "kubeconfig", []string{kc, "three"}, true, watchcache.Config{}, "three"},
		{"endpoint", "endpoint", []string{"https://10.0.0.1:6443"}, true, watchcache.Config{Endpoint: "https://10.0.0.1:6443"}, ""},
		{"endpoint without URL", "endpoint", nil, true, watchcache.Config{}, "Wrong argument count"},
		{"tls", "tls", []string{cert, key, ca}, true, watchcache.Config{TLSCert: cert, TLSKey: key, TLSCA: ca}, ""},
		{"tls with two files", "tls", []string{cert, key}, true, watchcache.Config{}, "Wrong argument count"},
		{"tls unreadable", "tls", []string{cert, missing, ca}, true, watchcache.Config{}, "tls: unreadable file"},
		{"qps", "apiserver_qps", []string{"2.5"}, true, watchcache.Config{Limits: &watchcache.Limits{QPS: 2.5}}, ""},
		{"qps zero", "apiserver_qps", []string{"0"}, true, watchcache.Config{Limits: &watchcache.Limits{}}, ""},
		{"qps negative", "apiserver_qps", []string{"-1"}, true, watchcache.Config{}, `apiserver_qps: want a number of calls a second, 0 or more, got "-1"`},
		{"qps infinite", "apiserver_qps", []string{"Inf"}, true, watchcache.Config{}, "apiserver_qps: want"},
		{"qps not a number", "apiserver_qps", []string{"NaN"}, true, watchcache.Config{}, "apiserver_qps: want"},
		{"qps words", "apiserver_qps", []string{"fast"}, true, watchcache.Config{}, "apiserver_qps: want"},
		{"qps two arguments", "apiserver_qps", []string{"1", "2"}, true, watchcache.Config{}, "Wrong argument count"},
		{"burst", "apiserver_burst", []string{"20"}, true, watchcache.Config{Limits: &watchcache.Limits{Burst: 20}}, ""},
		{"burst fraction", "apiserver_burst", []string{"1.5"}, true, watchcache.Config{}, `apiserver_burst: want a whole number, 0 or more, got "1.5"`},
		{"burst negative", "apiserver_burst", []string{"-3"}, true, watchcache.Config{}, "apiserver_burst: want a whole number"},
		{"burst missing", "apiserver_burst", nil, true, watchcache.Config{}, "Wrong argument count"},
		{"max inflight", "apiserver_max_inflight", []string{"4"}, true, watchcache.Config{Limits: &watchcache.Limits{MaxInflight: 4}}, ""},
		{"max inflight words", "apiserver_max_inflight", []string{"many"}, true, watchcache.Config{}, "apiserver_max_inflight: want a whole number"},
		{"not a connection option", "ttl", []string{"30"}, false, watchcache.Config{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg watchcache.Config
			handled, err := ParseConnectionOption(controller(t), tc.opt, tc.args, &cfg)
			if handled != tc.handled {
				t.Errorf("handled = %v, want %v", handled, tc.handled)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "Testfile:1") {
					t.Errorf("error = %v, want one naming Testfile:1 with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error = %v", err)
			}
			if got, want := connectionKey(cfg), connectionKey(tc.want); got != want {
				t.Errorf("config = %s, want %s", got, want)
			}
			if (cfg.Limits == nil) != (tc.want.Limits == nil) || (cfg.Limits != nil && *cfg.Limits != *tc.want.Limits) {
				t.Errorf("limits = %+v, want %+v", cfg.Limits, tc.want.Limits)
			}
		})
	}
}

// TestShareLimits: stanzas of one Corefile on one connection share one set
// of limits; a value set twice differently is an error naming both
// plugins; another connection has its own.
func TestShareLimits(t *testing.T) {
	c := controller(t)
	a := watchcache.Config{Endpoint: "https://a", Limits: &watchcache.Limits{QPS: 10}}
	if err := ShareLimits(c, "kubeschema", &a); err != nil {
		t.Fatal(err)
	}
	b := watchcache.Config{Endpoint: "https://a", Limits: &watchcache.Limits{Burst: 30}}
	if err := ShareLimits(c, "multicluster", &b); err != nil {
		t.Fatal(err)
	}
	none := watchcache.Config{Endpoint: "https://a"}
	if err := ShareLimits(c, "kubeschema", &none); err != nil {
		t.Fatal(err)
	}
	if a.Limits != b.Limits || b.Limits != none.Limits {
		t.Fatal("stanzas on one connection do not share their limits")
	}
	if want := (watchcache.Limits{QPS: 10, Burst: 30}); *a.Limits != want {
		t.Errorf("shared limits = %+v, want %+v", *a.Limits, want)
	}
	same := watchcache.Config{Endpoint: "https://a", Limits: &watchcache.Limits{QPS: 10}}
	if err := ShareLimits(c, "multicluster", &same); err != nil {
		t.Errorf("the same value set again: %v", err)
	}
	clash := watchcache.Config{Endpoint: "https://a", Limits: &watchcache.Limits{QPS: 20}}
	err := ShareLimits(c, "multicluster", &clash)
	if err == nil || !strings.Contains(err.Error(), "multicluster sets apiserver_qps 20, but kubeschema") {
		t.Errorf("a clash: error = %v", err)
	}
	burst := watchcache.Config{Endpoint: "https://a", Limits: &watchcache.Limits{Burst: 31}}
	if err := ShareLimits(c, "kubeschema", &burst); err == nil || !strings.Contains(err.Error(), "kubeschema sets apiserver_burst 31, but multicluster") {
		t.Errorf("burst set twice differently: error = %v", err)
	}
	inflight := watchcache.Config{Endpoint: "https://a", Limits: &watchcache.Limits{MaxInflight: 2}}
	if err := ShareLimits(c, "kubeschema", &inflight); err != nil || a.Limits.MaxInflight != 2 {
		t.Errorf("max inflight set once: %v, shared %+v", err, *a.Limits)
	}
	other := watchcache.Config{Endpoint: "https://b", Limits: &watchcache.Limits{QPS: 20}}
	if err := ShareLimits(c, "multicluster", &other); err != nil {
		t.Fatal(err)
	}
	if other.Limits == a.Limits || other.Limits.QPS != 20 {
		t.Errorf("another connection shares the first one's limits: %+v", *other.Limits)
	}
	// A new Corefile (a reload) starts afresh.
	fresh := watchcache.Config{Endpoint: "https://a", Limits: &watchcache.Limits{QPS: 99}}
	if err := ShareLimits(controller(t), "kubeschema", &fresh); err != nil || fresh.Limits.QPS != 99 {
		t.Errorf("a new Corefile: %v, %+v", err, fresh.Limits)
	}
}
