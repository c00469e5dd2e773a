package multicluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
)

func TestMulticlusterParseOptions(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:6443'}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user: {token: t}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := caddy.NewTestController("dns", `multicluster ClusterSet.Local 10.42.0.0/16 ip6.arpa {
		kubeconfig `+kc+` x
		endpoint https://10.0.0.1:6443
		ttl 30
		fallthrough in-addr.arpa
		startup_timeout 2s
		cluster_id ClusterA
	}`)
	m, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Zones, " "); got != "clusterset.local. 42.10.in-addr.arpa. ip6.arpa." {
		t.Errorf("zones = %q", got)
	}
	if m.TTL != 30 || m.startupTimeout != 2*time.Second || m.cfg.Kubeconfig != kc || m.cfg.Context != "x" || m.cfg.Endpoint != "https://10.0.0.1:6443" {
		t.Errorf("options: ttl %d, startup_timeout %s, cfg %+v", m.TTL, m.startupTimeout, m.cfg)
	}
	if m.clusterID != "clustera" {
		t.Errorf("cluster_id = %q, want it in lower case", m.clusterID)
	}
	if !m.Fall.Through("1.0.42.10.in-addr.arpa.") || m.Fall.Through("x.clusterset.local.") {
		t.Error("fallthrough zones not applied")
	}
}

// TestParseDefaults: the zone is clusterset.local whatever the server
// block's zones are.
func TestMulticlusterParseDefaults(t *testing.T) {
	c := caddy.NewTestController("dns", "multicluster")
	c.ServerBlockKeys = []string{"cluster.local:53"}
	m, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Zones, " ") != "clusterset.local." || m.TTL != defaultTTL || m.startupTimeout != defaultStartupTimeout || m.Fall.Zones != nil || m.clusterID != "" {
		t.Errorf("defaults: zones %v, ttl %d, startup_timeout %s, fallthrough %v, cluster_id %q", m.Zones, m.TTL, m.startupTimeout, m.Fall.Zones, m.clusterID)
	}
}

func TestMulticlusterParseErrors(t *testing.T) {
	for _, tc := range []struct{ corefile, want string }{
		{"multicluster {\nbogus\n}", `unknown property "bogus"`},
		{"multicluster {\nttl\n}", "Wrong argument count"},
		{"multicluster {\nttl 3601\n}", "ttl must be"},
		{"multicluster {\nttl x\n}", "ttl must be"},
		{"multicluster {\nkubeconfig /does/not/exist\n}", "unreadable file"},
		{"multicluster {\nkubeconfig\n}", "Wrong argument count"},
		{"multicluster {\nendpoint a b\n}", "Wrong argument count"},
		{"multicluster {\ntls a b\n}", "Wrong argument count"},
		{"multicluster {\nstartup_timeout soon\n}", "startup_timeout"},
		{"multicluster {\ncluster_id\n}", "Wrong argument count"},
		{"multicluster {\ncluster_id a b\n}", "Wrong argument count"},
		{"multicluster {\ncluster_id cluster_a\n}", `cluster_id "cluster_a" is not a DNS label`},
		{"multicluster {\ncluster_id a.b\n}", "is not a DNS label"},
		{"multicluster not_a..zone", "is not a domain name"},
		{"multicluster in-addr.arpa", "at least one forward zone"},
		{"multicluster\nmulticluster", "once"},
	} {
		_, err := parse(caddy.NewTestController("dns", tc.corefile))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Testfile:") {
			t.Errorf("%q: error %v, want it to name the file and say %q", tc.corefile, err, tc.want)
		}
	}
}
