package kubeschema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
)

func TestParseOptions(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:6443'}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user: {token: t}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := caddy.NewTestController("dns", `kubeschema cluster.local 10.96.0.0/16 {
		kubeconfig `+kc+` x
		namespaces a B
		labels app=web
		namespace_labels team in (x, y)
		pods verified
		endpoint_pod_names
		ttl 30
		ignore empty_service
		fallthrough in-addr.arpa
		startup_timeout 2s
	}`)
	k, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(k.Zones, " "); got != "cluster.local. 96.10.in-addr.arpa." {
		t.Errorf("zones = %q", got)
	}
	o := k.opts
	if k.TTL != 30 || o.pods != podsVerified || !o.endpointPodNames || !o.ignoreEmptyService || o.startupTimeout != 2*time.Second ||
		!o.namespaces["a"] || !o.namespaces["b"] || o.namespaceLabels == nil || k.cfg.LabelSelector != "app=web" || k.cfg.Context != "x" {
		t.Errorf("options = %+v cfg = %+v", o, k.cfg)
	}
	if !k.Fall.Through("1.0.96.10.in-addr.arpa.") || k.Fall.Through("x.cluster.local.") {
		t.Error("fallthrough zones not applied")
	}
}

func TestParseDefaults(t *testing.T) {
	k, err := parse(caddy.NewTestController("dns", "kubeschema"))
	if err != nil {
		t.Fatal(err)
	}
	if k.TTL != defaultTTL || k.opts.pods != podsDisabled || k.opts.startupTimeout != defaultStartupTimeout {
		t.Errorf("defaults = %+v", k.opts)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ corefile, want string }{
		{"kubeschema {\nbogus\n}", `unknown property "bogus"`},
		{"kubeschema {\nttl\n}", "Wrong argument count"},
		{"kubeschema {\nttl 3601\n}", "ttl must be"},
		{"kubeschema {\nttl -1\n}", "ttl must be"},
		{"kubeschema {\npods sometimes\n}", "pods: want"},
		{"kubeschema {\nkubeconfig /does/not/exist\n}", "unreadable file"},
		{"kubeschema {\nlabels ==x\n}", "labels:"},
		{"kubeschema {\nignore everything\n}", "ignore: unknown value"},
		{"kubeschema {\nstartup_timeout soon\n}", "startup_timeout"},
		{"kubeschema {\ntls a b\n}", "Wrong argument count"},
		{"kubeschema not_a..zone", "is not a domain name"},
		{"kubeschema\nkubeschema", "once"},
	} {
		_, err := parse(caddy.NewTestController("dns", tc.corefile))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Testfile:") {
			t.Errorf("%q: error %v, want it to name the file and say %q", tc.corefile, err, tc.want)
		}
	}
}
