package dnszone

import (
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		rest string
		want Name
	}{
		{"", Name{Kind: NameApex}},
		{"dns-version", Name{Kind: NameVersion}},
		{"x.dns-version", Name{}},
		{"dns", Name{Kind: NameDNSLabel}},
		{"ns.dns", Name{Kind: NameNS}},
		{"svc", Name{Kind: NameSvcLabel}},
		{"ns1.svc", Name{Kind: NameNamespace, Namespace: "ns1"}},
		{"web.ns1.svc", Name{Kind: NameService, Namespace: "ns1", Service: "web", Key: "web.ns1"}},
		{"_tcp.web.ns1.svc", Name{Kind: NameProto, Namespace: "ns1", Service: "web", Key: "web.ns1", Proto: "_tcp"}},
		{"_http._tcp.web.ns1.svc", Name{Kind: NamePort, Namespace: "ns1", Service: "web", Key: "web.ns1", Port: "_http._tcp", Proto: "_tcp"}},
		{"db-0.web.ns1.svc", Name{Kind: NameHost, Namespace: "ns1", Service: "web", Key: "web.ns1", Host: "db-0"}},
		{"db-0.cluster-a.web.ns1.svc", Name{Kind: NameHost, Namespace: "ns1", Service: "web", Key: "web.ns1", Host: "db-0.cluster-a"}},
		{"10-1-2-3.ns1.pod", Name{Kind: NameOther, Top: "pod", Labels: "10-1-2-3.ns1"}},
		{"us-west-2a.pin._zone.db.ns1.svc", Name{Kind: NameZonal, Namespace: "ns1", Service: "db", Key: "db.ns1", TopologyZone: "us-west-2a"}},
		{"corp.example.com.prefer._zone.db.ns1.svc", Name{Kind: NameZonal, Namespace: "ns1", Service: "db", Key: "db.ns1", TopologyZone: "corp.example.com", Prefer: true}},
		{"a.other._zone.db.ns1.svc", Name{}},
		{"pin._zone.db.ns1.svc", Name{}},
		{"_http._zone.db.ns1.svc", Name{Kind: NamePort, Namespace: "ns1", Service: "db", Key: "db.ns1", Port: "_http._zone", Proto: "_zone"}},
		{"-a.ns.svc", Name{}},
		{"a..svc", Name{}},
		{"x\\046y.ns.svc", Name{}},
	} {
		if got := ParseName(tc.rest); got != tc.want {
			t.Errorf("ParseName(%q) = %+v, want %+v", tc.rest, got, tc.want)
		}
	}
}

// FuzzParseName: any input parses to some kind without panicking, the
// strings it returns are pieces of the input, and the key of a service
// name is "<svc>.<ns>".
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"", "dns-version", "ns.dns", "dns", "svc", "ns1.svc", "web.ns1.svc", "_http._tcp.web.ns1.svc",
		"_tcp.web.ns1.svc", "cluster-a.web.ns1.svc", "db-0.cluster-a.db.ns1.svc", "x.y.z.db.ns1.svc", "_a.b.web.ns1.svc",
		"a._b.web.ns1.svc", "x\\046y.ns.svc", "..svc", ".", "-a.ns.svc", "10-1-2-3.ns1.pod", strings.Repeat("a", 64) + ".ns.svc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := ParseName(s)
		for _, part := range []string{p.Namespace, p.Service, p.Key, p.Host, p.Port, p.Proto, p.Top, p.Labels} {
			if !strings.Contains(s, part) {
				t.Fatalf("ParseName(%q) returned %q, not part of the input", s, part)
			}
		}
		switch p.Kind {
		case NameService, NameProto, NamePort, NameHost:
			if p.Key != p.Service+"."+p.Namespace || !strings.HasSuffix(s, p.Key+".svc") {
				t.Fatalf("ParseName(%q): key %q", s, p.Key)
			}
		}
	})
}
