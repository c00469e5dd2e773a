package stanza

import (
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

func TestParseZones(t *testing.T) {
	z, err := ParseZones([]string{"ClusterSet.Local", "10.42.0.0/16"}, []string{"unused."})
	if err != nil || strings.Join(z, " ") != "clusterset.local. 42.10.in-addr.arpa." {
		t.Errorf("ParseZones = %v, %v", z, err)
	}
	if z, _ := ParseZones(nil, []string{"clusterset.local."}); strings.Join(z, " ") != "clusterset.local." {
		t.Errorf("default zones = %v", z)
	}
	if _, err := ParseZones([]string{"a..b"}, nil); err == nil {
		t.Error("a..b accepted as a zone")
	}
	if !dnsname.IsReverseZone("42.10.in-addr.arpa.") || dnsname.IsReverseZone("clusterset.local.") {
		t.Error("IsReverseZone")
	}
}

func TestListenAddrs(t *testing.T) {
	if got := ListenAddrs([]string{"127.0.0.1", "::"}); len(got) != 1 || got[0].String() != "127.0.0.1" {
		t.Errorf("ListenAddrs = %v", got)
	}
	if got := ListenAddrs([]string{"::"}); len(got) == 0 {
		t.Error("ListenAddrs of a wildcard gave nothing")
	}
}

// controller is a controller on a one-word stanza, its directive read.
func controller(t *testing.T) *caddy.Controller {
	t.Helper()
	c := caddy.NewTestController("dns", "kubeschema")
	c.Next()
	return c
}

func TestParseTTL(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want uint32
		err  string
	}{
		{[]string{"0"}, 0, ""},
		{[]string{"30"}, 30, ""},
		{[]string{"3600"}, 3600, ""},
		{[]string{"3601"}, 0, `ttl must be a whole number of seconds from 0 to 3600, got "3601"`},
		{[]string{"-1"}, 0, "ttl must be"},
		{[]string{"1.5"}, 0, "ttl must be"},
		{nil, 0, "Wrong argument count"},
		{[]string{"1", "2"}, 0, "Wrong argument count"},
	} {
		got, err := ParseTTL(controller(t), tc.args)
		checkParse(t, "ttl", tc.args, got, tc.want, err, tc.err)
	}
}

func TestParseStartupTimeout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		err  string
	}{
		{[]string{"5s"}, 5 * time.Second, ""},
		{[]string{"0s"}, 0, ""},
		{[]string{"2m30s"}, 150 * time.Second, ""},
		{[]string{"-1s"}, 0, `startup_timeout: "-1s" is not a duration`},
		{[]string{"5"}, 0, "is not a duration"},
		{nil, 0, "Wrong argument count"},
	} {
		got, err := ParseStartupTimeout(controller(t), tc.args)
		checkParse(t, "startup_timeout", tc.args, got, tc.want, err, tc.err)
	}
}

// checkParse checks a parser's value, or its error naming the line.
func checkParse[T comparable](t *testing.T, opt string, args []string, got, want T, err error, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "Testfile:1") {
			t.Errorf("%s %q: error = %v, want one naming Testfile:1 with %q", opt, args, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("%s %q = %v, %v; want %v", opt, args, got, err, want)
	}
}
