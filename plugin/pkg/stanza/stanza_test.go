package stanza

import (
	"strings"
	"testing"

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
