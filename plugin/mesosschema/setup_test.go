package mesosschema

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// TestParseOptions reads every option of a stanza.
func TestParseOptions(t *testing.T) {
	c := caddy.NewTestController("dns", `mesosschema Mesos.Example 10.0.0.0/8 {
		masters 10.0.0.10:5050 10.0.0.11:5050
		masters 10.0.0.12:5050
		zk zk://10.0.0.10:2181,10.0.0.11:2181/mesos
		refresh 5s
		state_timeout 20s
		zk_timeout 10s
		ttl 30
		ip_sources docker host
		enforce_rfc952
		soa_mname dns.mesos.example
		soa_rname admin@mesos.example
		soa_refresh 61
		soa_retry 601
		soa_expire 86401
		soa_minttl 31
		tls /etc/ca.pem
		tls_insecure_skip_verify
		basic_auth principal secret
		http 127.0.0.1:8123
		fallthrough in-addr.arpa
		startup_timeout 2s
	}`)
	m, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Zones, " "); got != "mesos.example. 10.in-addr.arpa." {
		t.Errorf("zones = %q", got)
	}
	if !slices.Equal(m.master.Masters, []string{"10.0.0.10:5050", "10.0.0.11:5050", "10.0.0.12:5050"}) || !slices.Equal(m.gen.masters, m.master.Masters) ||
		m.master.ZK != "zk://10.0.0.10:2181,10.0.0.11:2181/mesos" || m.master.Timeout != 20*time.Second || m.master.ZKTimeout != 10*time.Second ||
		m.master.Scheme != "https" || m.master.CAFile != "/etc/ca.pem" || !m.master.InsecureSkipVerify ||
		m.master.Auth.Basic == nil || m.master.Auth.Basic.Principal != "principal" || m.master.Auth.Basic.Secret != "secret" {
		t.Errorf("master options: %+v", m.master)
	}
	if m.refresh != 5*time.Second || m.TTL != 30 || !slices.Equal(m.gen.ipSources, []string{"docker", "host"}) || !m.gen.rfc952 ||
		m.httpAddr != "127.0.0.1:8123" || !m.keepState || m.startupTimeout != 2*time.Second {
		t.Errorf("options: refresh %s ttl %d sources %v rfc952 %t http %q startup %s", m.refresh, m.TTL, m.gen.ipSources, m.gen.rfc952, m.httpAddr, m.startupTimeout)
	}
	want := dnszone.SOAFields{NS: "dns.mesos.example.", Mbox: "admin.mesos.example.", Refresh: 61, Retry: 601, Expire: 86401, MinTTL: 31}
	if m.SOA != want || m.gen.nsName != "dns" {
		t.Errorf("SOA %+v, nameserver's own name %q; want %+v and dns", m.SOA, m.gen.nsName, want)
	}
	if !m.Fall.Through("1.0.0.10.in-addr.arpa.") || m.Fall.Through("x.mesos.example.") {
		t.Error("fallthrough zones not applied")
	}
}

// TestParseDefaults: Mesos-DNS's defaults, the zone mesos whatever the
// server block's zones are.
func TestParseDefaults(t *testing.T) {
	c := caddy.NewTestController("dns", "mesosschema {\nmasters 10.0.0.10:5050\n}")
	c.ServerBlockKeys = []string{".:53"}
	m, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	want := dnszone.SOAFields{NS: "ns1.mesos.", Mbox: "root.ns1.mesos.", Refresh: 60, Retry: 600, Expire: 86400, MinTTL: 60}
	if strings.Join(m.Zones, " ") != "mesos." || m.TTL != 60 || m.refresh != time.Minute || m.master.Timeout != 30*time.Second ||
		m.master.ZKTimeout != 30*time.Second || m.SOA != want || m.gen.nsName != "ns1" || m.Names != dnszone.RecordNames ||
		!slices.Equal(m.gen.ipSources, mesosstate.DefaultIPSources) || m.httpAddr != "" || m.keepState || m.master.Scheme != "" {
		t.Errorf("defaults: zones %v ttl %d refresh %s timeouts %s/%s SOA %+v ns %q sources %v http %q", m.Zones, m.TTL, m.refresh,
			m.master.Timeout, m.master.ZKTimeout, m.SOA, m.gen.nsName, m.gen.ipSources, m.httpAddr)
	}
	// soa_mname outside the zone: no record of its own.
	c = caddy.NewTestController("dns", "mesosschema {\nmasters 10.0.0.10:5050\nsoa_mname ns.example.org\n}")
	if m, err = parse(c); err != nil || m.gen.nsName != "" || m.SOA.NS != "ns.example.org." || m.SOA.Mbox != "root.ns.example.org." {
		t.Errorf("soa_mname outside: %v, name %q, SOA %+v", err, m.gen.nsName, m.SOA)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ corefile, want string }{
		{"mesosschema", "no masters and no zk"},
		{"mesosschema {\nbogus\n}", `unknown property "bogus"`},
		{"mesosschema {\nmasters\n}", "Wrong argument count"},
		{"mesosschema {\nmasters 10.0.0.1\n}", `master "10.0.0.1"`},
		{"mesosschema {\nzk http://10.0.0.1:2181/mesos\n}", "zk"},
		{"mesosschema {\nzk\n}", "Wrong argument count"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nrefresh 10ms\n}", "shorter than a second"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nrefresh soon\n}", `refresh: "soon" is not a duration`},
		{"mesosschema {\nmasters 10.0.0.1:5050\nstate_timeout 0s\n}", "state_timeout"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nttl 3601\n}", "ttl must be"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nip_sources\n}", "ip_sources"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nip_sources host bogus\n}", `unknown source "bogus"`},
		{"mesosschema {\nmasters 10.0.0.1:5050\nip_sources host host\n}", "ip_sources"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nenforce_rfc952 yes\n}", "Wrong argument count"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nsoa_refresh 0\n}", "soa_refresh"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nsoa_mname a..b\n}", "not a domain name"},
		{"mesosschema {\nmasters 10.0.0.1:5050\ntls a b\n}", "Wrong argument count"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nbasic_auth p\n}", "Wrong argument count"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nbasic_auth p s\niam /x.json\n}", "exclusive"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nhttp 127.0.0.1:http\n}", "host:port"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nhttp 0\n}", "host:port"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nbasic_auth p s\n}", "credentials over plain http refused"},
		{"mesosschema {\nmasters 10.0.0.1:5050\niam /x.json\n}", "insecure_credentials"},
		{"mesosschema {\nmasters 10.0.0.1:5050\ninsecure_credentials yes\n}", "Wrong argument count"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nbasic_auth_file /nonexistent/credential\n}", "no such file"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nmax_state_size\n}", "Wrong argument count"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nmax_state_size lots\n}", `max_state_size: "lots" is not a size`},
		{"mesosschema {\nmasters 10.0.0.1:5050\nmax_state_size 256XB\n}", "is not a size"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nmax_state_size 0MiB\n}", "is not a size"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nmax_state_size 5GiB\n}", "out of range"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nmax_state_size 100\n}", "out of range"},
		{"mesosschema {\nmasters 10.0.0.1:5050\nstartup_timeout soon\n}", "startup_timeout"},
		{"mesosschema in-addr.arpa {\nmasters 10.0.0.1:5050\n}", "at least one forward zone"},
		{"mesosschema {\nmasters 10.0.0.1:5050\n}\nmesosschema", "once"},
	} {
		_, err := parse(caddy.NewTestController("dns", tc.corefile))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Testfile:") {
			t.Errorf("%q: error %v, want it to name the file and say %q", tc.corefile, err, tc.want)
		}
	}
}

// TestParseHTTPAddress: a bare port, or a port without a host, listens on
// loopback only; any other address is taken as written.
func TestParseHTTPAddress(t *testing.T) {
	for arg, want := range map[string]string{
		"8123":           "127.0.0.1:8123",
		":8123":          "127.0.0.1:8123",
		"127.0.0.1:8123": "127.0.0.1:8123",
		"[::1]:8123":     "[::1]:8123",
		"0.0.0.0:8123":   "0.0.0.0:8123",
		"10.0.0.5:8123":  "10.0.0.5:8123",
	} {
		m, err := parse(caddy.NewTestController("dns", "mesosschema {\nmasters 10.0.0.1:5050\nhttp "+arg+"\n}"))
		if err != nil {
			t.Errorf("http %s: %v; want %q", arg, err, want)
		} else if m.httpAddr != want {
			t.Errorf("http %s: %q, want %q", arg, m.httpAddr, want)
		}
	}
}

// TestParseCredentials: basic_auth_file reads Mesos's two credential
// file forms; credentials over plain http need insecure_credentials;
// max_state_size takes units.
func TestParseCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for name, body := range map[string]string{
		"text": "dns s3cret-file\n",
		"json": `{"principal": "dns", "secret": "s3cret-file"}`,
	} {
		path := write(name, body)
		m, err := parse(caddy.NewTestController("dns", "mesosschema {\nmasters 10.0.0.1:5050\nbasic_auth_file "+path+"\ninsecure_credentials\nmax_state_size 64MiB\n}"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := m.master.Auth.Basic; b == nil || b.Principal != "dns" || b.Secret != "s3cret-file" || !m.master.InsecureCredentials || m.master.MaxBodySize != 64<<20 {
			t.Errorf("%s: basic %+v, insecure %t, max %d", name, b, m.master.InsecureCredentials, m.master.MaxBodySize)
		}
	}
	// A file in neither form: the error names the file, never its content.
	for name, body := range map[string]string{"one-field": "s3cret-alone\n", "three": "a s3cret-x c", "bad-json": `{"principal": "dns", "secret": s3cret-x}`} {
		path := write(name, body)
		_, err := parse(caddy.NewTestController("dns", "mesosschema {\nmasters 10.0.0.1:5050\nbasic_auth_file "+path+"\ninsecure_credentials\n}"))
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s without the secret", name, err, path)
		}
	}
	for arg, want := range map[string]int64{"1048576": 1 << 20, "256MiB": 256 << 20, "500MB": 500e6, "2GiB": 2 << 30, "64KiB": 64 << 10} {
		m, err := parse(caddy.NewTestController("dns", "mesosschema {\nmasters 10.0.0.1:5050\nmax_state_size "+arg+"\n}"))
		if err != nil {
			t.Errorf("max_state_size %s: %v, want %d", arg, err, want)
		} else if m.master.MaxBodySize != want {
			t.Errorf("max_state_size %s: %d, want %d", arg, m.master.MaxBodySize, want)
		}
	}
}
