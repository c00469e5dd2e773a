package gensearchpath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/schemadns/schemadns/plugin/pkg/stanza/stanzatest"
)

func TestGensearchpathSetup(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch c.example.internal. example.internal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		corefile string
		err      string // part of the error; "" for none
		host     []string
		code     uint16
		fall     bool
		forceTCP bool
		upstream []string
	}{
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n}",
			code: 65534, upstream: []string{"10.96.0.10:53"}},
		{corefile: "gensearchpath ap.k8s.io. cluster.local. v1 {\n forward 10.96.0.10:1053 dns://[fd00::a]\n search corp.example.net. " + resolv + "\n option_code 65001\n fallthrough\n}",
			host: []string{"corp.example.net", "c.example.internal", "example.internal"}, code: 65001, fall: true,
			upstream: []string{"10.96.0.10:1053", "[fd00::a]:53"}},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n force_tcp\n}",
			code: 65534, forceTCP: true, upstream: []string{"10.96.0.10:53"}},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n force_tcp yes\n}", err: "Wrong argument count"},
		{corefile: "gensearchpath ap.k8s.io cluster.local {\n forward 10.96.0.10\n}", err: "SCHEMA"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v2 {\n forward 10.96.0.10\n}", err: `schema version "v2"`},
		{corefile: "gensearchpath ap..io cluster.local v1 {\n forward 10.96.0.10\n}", err: "autopath suffix"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1", err: "needs forward"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward\n}", err: "Wrong argument count"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward tls://10.96.0.10\n}", err: "only plain DNS"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward not-an-address\n}", err: "forward"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n search bad..domain\n}", err: "empty label"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n search /nonexistent/resolv.conf\n}", err: "read /nonexistent"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n option_code 1\n}", err: "experimental range"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n fallthrough cluster.local\n}", err: "Wrong argument count"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n ndots 5\n}", err: `unknown property "ndots"`},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n search " + strings.Repeat(strings.Repeat("x", 60)+".y ", 8) + "\n}", err: "would not fit"},
		{corefile: "gensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n}\ngensearchpath ap.k8s.io cluster.local v1 {\n forward 10.96.0.10\n}", err: "only once"},
	}
	for _, tc := range tests {
		g, ok := stanzatest.Parse(t, tc.corefile, tc.err, parseStanza)
		if !ok {
			continue
		}
		var upstream []string
		for _, p := range g.proxies {
			upstream = append(upstream, p.Addr())
		}
		if !slices.Equal(g.host, tc.host) || g.code != tc.code || g.fall != tc.fall || g.forceTCP != tc.forceTCP || !slices.Equal(upstream, tc.upstream) {
			t.Errorf("%q: host %q code %d fall %v force_tcp %v upstream %q", tc.corefile, g.host, g.code, g.fall, g.forceTCP, upstream)
		}
	}
}

// TestGensearchpathSetupErrorsNameTheLine: a Corefile error says where it is.
func TestGensearchpathSetupErrorsNameTheLine(t *testing.T) {
	_, err := parseStanza(caddy.NewTestController("dns", "gensearchpath ap.k8s.io cluster.local v1 {\n    forward 10.96.0.10\n    option_code 7\n}"))
	if err == nil || !strings.Contains(err.Error(), "Testfile:3") {
		t.Errorf("error %v does not name line 3", err)
	}
}
