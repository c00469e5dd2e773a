package edns0autopath

import (
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/schemadns/schemadns/plugin/pkg/searchpath"

	"github.com/schemadns/schemadns/plugin/pkg/stanza/stanzatest"
)

func TestEdns0autopathSetup(t *testing.T) {
	tests := []struct {
		corefile string
		err      string // part of the error; "" for none
		zones    []string
		code     uint16
		max      int
		domain   string // the search domain of namespace ns
	}{
		{corefile: "edns0autopath", zones: []string{"."}, code: 65534, max: 8, domain: "search.ns.cluster.local.ap.k8s.io"},
		{corefile: "edns0autopath cluster.local. example.org {\n suffix AP.example.\n cluster_suffix cluster.example\n option_code 0xfde9\n max_search_paths 12\n}",
			zones: []string{"cluster.local.", "example.org."}, code: 65001, max: 12, domain: "search.ns.cluster.example.ap.example"},
		{corefile: "edns0autopath {\n option_code 65000\n}", err: "experimental range"},
		{corefile: "edns0autopath {\n option_code 65535\n}", err: "experimental range"},
		{corefile: "edns0autopath {\n max_search_paths 0\n}", err: "max_search_paths"},
		{corefile: "edns0autopath {\n max_search_paths 65\n}", err: "max_search_paths"},
		{corefile: "edns0autopath {\n max_search_paths\n}", err: "Wrong argument count"},
		{corefile: "edns0autopath {\n suffix a..b\n}", err: "empty label"},
		{corefile: "edns0autopath {\n cluster_suffix a b\n}", err: "Wrong argument count"},
		{corefile: "edns0autopath {\n bogus 1\n}", err: `unknown property "bogus"`},
		{corefile: "edns0autopath a/b", err: "not a domain name"},
		{corefile: "edns0autopath\nedns0autopath", err: "only once"},
	}
	for _, tc := range tests {
		a, ok := stanzatest.Parse(t, tc.corefile, tc.err, parse)
		if !ok {
			continue
		}
		if strings.Join(a.Zones, " ") != strings.Join(tc.zones, " ") || a.code != tc.code || a.maxPaths != tc.max || a.form.Domain("ns") != tc.domain {
			t.Errorf("%q: zones %q code %d max %d domain %s", tc.corefile, a.Zones, a.code, a.maxPaths, a.form.Domain("ns"))
		}
	}
	if searchpath.DefaultCode != 65534 {
		t.Error("the default code is 65534")
	}
}

// TestEdns0autopathSetupErrorsNameTheLine: a Corefile error says where it is.
func TestEdns0autopathSetupErrorsNameTheLine(t *testing.T) {
	c := caddy.NewTestController("dns", "edns0autopath {\n    max_search_paths 8\n    option_code 7\n}")
	_, err := parse(c)
	if err == nil || !strings.Contains(err.Error(), "Testfile:3") {
		t.Errorf("error %v does not name line 3", err)
	}
}
