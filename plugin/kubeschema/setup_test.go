package kubeschema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
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
		zonal
		apiserver_qps 12.5
		apiserver_burst 30
		apiserver_max_inflight 4
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
		!o.namespaces["a"] || !o.namespaces["b"] || o.namespaceLabels == nil || k.cfg.LabelSelector != "app=web" || k.cfg.Context != "x" ||
		!k.Zonal || !o.zonal {
		t.Errorf("options = %+v cfg = %+v", o, k.cfg)
	}
	if l := k.cfg.Limits; l == nil || *l != (kubesource.Limits{QPS: 12.5, Burst: 30, MaxInflight: 4}) {
		t.Errorf("limits = %+v", l)
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
		{"kubeschema {\nzonal\nnoendpoints\n}", "remove noendpoints or zonal"},
		{"kubeschema cluster.local in-addr.arpa {\nreverse_cidrs\n}", "reverse_cidrs: want auto"},
		{"kubeschema cluster.local in-addr.arpa {\nreverse_cidrs 10.0.0.0/33\n}", "is not a CIDR"},
		{"kubeschema cluster.local in-addr.arpa {\nreverse_cidrs 10.0.0.0/8 auto\n}", `"auto" is not a CIDR`},
		{"kubeschema cluster.local {\nreverse_cidrs 10.0.0.0/8\n}", "10.0.0.0/8 is outside every reverse zone"},
		{"kubeschema cluster.local 96.10.in-addr.arpa {\nreverse_cidrs 10.97.0.0/16\n}", "10.97.0.0/16 is outside every reverse zone"},
		{"kubeschema {\nzonal x\n}", "Wrong argument count"},
		{"kubeschema {\napiserver_qps -1\n}", "apiserver_qps: want"},
		{"kubeschema {\napiserver_qps fast\n}", "apiserver_qps: want"},
		{"kubeschema {\napiserver_burst 1.5\n}", "apiserver_burst: want"},
		{"kubeschema {\napiserver_max_inflight -2\n}", "apiserver_max_inflight: want"},
		{"kubeschema {\napiserver_burst\n}", "Wrong argument count"},
	} {
		_, err := parse(caddy.NewTestController("dns", tc.corefile))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Testfile:") {
			t.Errorf("%q: error %v, want it to name the file and say %q", tc.corefile, err, tc.want)
		}
	}
}

// TestSharedLimits: stanzas of one Corefile that share a connection share
// its limits; one that sets none takes the others'; two that set one
// differently are an error, two that use different connections are not.
func TestSharedLimits(t *testing.T) {
	parseAll := func(stanzas ...string) ([]*kubesource.Limits, error) {
		first := caddy.NewTestController("dns", "")
		var out []*kubesource.Limits
		for _, stanza := range stanzas {
			c := *first // another server block of the same Corefile
			c.Dispenser = caddyfile.NewDispenser("Testfile", strings.NewReader(stanza))
			k, err := parse(&c)
			if err != nil {
				return out, err
			}
			out = append(out, k.cfg.Limits)
		}
		return out, nil
	}
	got, err := parseAll("kubeschema {\napiserver_qps 20\n}", "kubeschema {\napiserver_burst 40\n}", "kubeschema",
		"kubeschema {\nendpoint https://127.0.0.2:6443\napiserver_qps 7\n}")
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != got[1] || got[1] != got[2] || *got[0] != (kubesource.Limits{QPS: 20, Burst: 40}) {
		t.Errorf("shared limits: %+v %+v %+v", got[0], got[1], got[2])
	}
	if got[3] == got[0] || *got[3] != (kubesource.Limits{QPS: 7}) {
		t.Errorf("another connection's limits: %+v", got[3])
	}
	_, err = parseAll("kubeschema {\napiserver_qps 20\n}", "kubeschema {\napiserver_qps 30\n}")
	if err == nil || !strings.Contains(err.Error(), "kubeschema sets apiserver_qps 30, but kubeschema, which shares its connection to the API server, set 20") {
		t.Errorf("conflicting limits: %v", err)
	}
}

// TestParseReverseCIDRs: auto and ranges, masked; a range meets a served
// reverse zone when the zone is inside it or it is inside the zone.
func TestParseReverseCIDRs(t *testing.T) {
	for _, tc := range []struct {
		stanza string
		auto   bool
		fixed  string
	}{
		{"kubeschema cluster.local in-addr.arpa ip6.arpa {\nreverse_cidrs auto 10.244.1.7/16 fd00:10:244::/48\n}", true, "[10.244.0.0/16 fd00:10:244::/48]"},
		{"kubeschema cluster.local 96.10.in-addr.arpa {\nreverse_cidrs 10.96.0.0/12\n}", false, "[10.96.0.0/12]"},
		{"kubeschema cluster.local 10.in-addr.arpa {\nreverse_cidrs 10.96.0.0/24\n}", false, "[10.96.0.0/24]"},
		{"kubeschema cluster.local in-addr.arpa {\nreverse_cidrs auto\n}", true, "[]"},
	} {
		k, err := parse(caddy.NewTestController("dns", tc.stanza))
		if err != nil {
			t.Errorf("%q: %v", tc.stanza, err)
			continue
		}
		r := k.opts.reverse
		if r.auto != tc.auto || fmt.Sprint(r.fixed) != tc.fixed {
			t.Errorf("%q: auto %t ranges %v, want %t %s", tc.stanza, r.auto, r.fixed, tc.auto, tc.fixed)
		}
	}
}
