package searchpath

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestAutopathOptionParse(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	path253 := strings.Repeat(long63+".", 3) + strings.Repeat("b", 61) // 3*64 + 61
	tests := []struct {
		value string
		max   int
		want  []string
		err   error
	}{
		{"default.svc.cluster.local,svc.cluster.local,cluster.local", 8,
			[]string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, nil},
		{"a", 1, []string{"a"}, nil},
		{"Corp.Example-1.NET,_srv.x", 0, []string{"Corp.Example-1.NET", "_srv.x"}, nil},
		{"a,a", 2, []string{"a", "a"}, nil},
		{long63, 1, []string{long63}, nil},
		{path253, 1, []string{path253}, nil},
		{"", 8, nil, ErrEmpty},
		{"a,b,c", 2, nil, ErrTooManyPaths},
		{strings.Repeat("a,", 256) + "a", 0, nil, ErrTooLong},
		{",a", 8, nil, ErrBadPath},
		{"a,", 8, nil, ErrBadPath},
		{"a,,b", 8, nil, ErrBadPath},
		{"a, b", 8, nil, ErrBadPath},
		{"a.", 8, nil, ErrBadPath},
		{".a", 8, nil, ErrBadPath},
		{".", 8, nil, ErrBadPath},
		{"a..b", 8, nil, ErrBadPath},
		{"a\\.b", 8, nil, ErrBadPath},
		{"caf\xc3\xa9.fr", 8, nil, ErrBadPath},
		{"a*b", 8, nil, ErrBadPath},
		{long63 + "a", 8, nil, ErrBadPath},
		{path253 + "b", 8, nil, ErrBadPath},
	}
	for _, tc := range tests {
		got, err := Parse([]byte(tc.value), tc.max)
		if !errors.Is(err, tc.err) {
			t.Errorf("Parse(%q, %d): error %v, want %v", tc.value, tc.max, err, tc.err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q, %d) = %q, want %q", tc.value, tc.max, got, tc.want)
		}
		if err == nil {
			back, err := Format(got)
			if err != nil || string(back) != tc.value {
				t.Errorf("Format(Parse(%q)) = %q, %v", tc.value, back, err)
			}
		}
	}
}

func TestAutopathOptionFormat(t *testing.T) {
	if _, err := Format(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("Format(nil): %v", err)
	}
	if _, err := Format([]string{"ok", "bad."}); !errors.Is(err, ErrBadPath) {
		t.Errorf("Format with a trailing dot: %v", err)
	}
	many := slices.Repeat([]string{strings.Repeat("a", 63)}, 9) // 9*64-1 = 575 octets
	if _, err := Format(many); !errors.Is(err, ErrTooLong) {
		t.Errorf("Format of 575 octets: %v", err)
	}
}

func TestAutopathOptionJoinAndWireLen(t *testing.T) {
	tests := []struct {
		base, path, want string
	}{
		{"web.", "default.svc.cluster.local", "web.default.svc.cluster.local."},
		{".", "cluster.local", "cluster.local."},
		{"a\\.b.", "svc.cluster.local", "a\\.b.svc.cluster.local."},
		{"x\\000y.", "z", "x\\000y.z."},
	}
	for _, tc := range tests {
		got, err := Join(tc.base, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("Join(%q, %q) = %q, %v; want %q", tc.base, tc.path, got, err, tc.want)
		}
	}
	// 255 octets fit, 256 do not (RFC 1035 2.3.4; miekg/dns packs 256).
	base := strings.Repeat(strings.Repeat("a", 62)+".", 3) // 189 octets in wire form, without the root
	for path, fits := range map[string]bool{strings.Repeat("b", 62) + ".c": true, strings.Repeat("b", 62) + ".cd": false} {
		if _, err := Join(base, path); (err == nil) != fits {
			t.Errorf("Join of %d octets: %v, want fits=%v", 189+len(path)+2, err, fits)
		}
	}
	for _, name := range []string{".", "a.", "a", "a\\.b.", "\\065\\066.", "a\\\\.", "web.default.svc.cluster.local."} {
		buf := make([]byte, 512)
		want, err := dns.PackDomainName(dns.Fqdn(name), buf, 0, nil, false)
		if err != nil {
			t.Fatalf("pack %q: %v", name, err)
		}
		if got := WireLen(name); got != want {
			t.Errorf("WireLen(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestAutopathOptionCode(t *testing.T) {
	for s, want := range map[string]uint16{"65534": 65534, "0xfffe": 65534, "65001": 65001, "0xFDE9": 65001} {
		if got, err := ParseCode(s); err != nil || got != want {
			t.Errorf("ParseCode(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"65000", "65535", "0", "-1", "x", "", "70000"} {
		if _, err := ParseCode(s); err == nil {
			t.Errorf("ParseCode(%q) accepted", s)
		}
	}
}

func TestAutopathOptionOnTheWire(t *testing.T) {
	m := new(dns.Msg)
	m.SetQuestion("web.", dns.TypeA)
	if _, found, _ := Find(m, DefaultCode); found {
		t.Fatal("found an option in a message without OPT")
	}
	value, _ := Format([]string{"default.svc.cluster.local", "svc.cluster.local"})
	Attach(m, DefaultCode, value, 1232)
	m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID})
	wire, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	back := new(dns.Msg)
	if err := back.Unpack(wire); err != nil {
		t.Fatal(err)
	}
	got, found, err := Find(back, DefaultCode)
	if err != nil || !found || string(got) != string(value) {
		t.Fatalf("Find after a round trip: %q, %v, %v", got, found, err)
	}
	if back.IsEdns0().UDPSize() != 1232 {
		t.Errorf("UDP size %d", back.IsEdns0().UDPSize())
	}
	if _, found, _ := Find(back, 65001); found {
		t.Error("found the option under another code")
	}
	back.IsEdns0().Option = append(back.IsEdns0().Option, &dns.EDNS0_LOCAL{Code: DefaultCode, Data: []byte("x")})
	if _, _, err := Find(back, DefaultCode); !errors.Is(err, ErrDuplicate) {
		t.Errorf("two options: %v", err)
	}
	Remove(back, DefaultCode)
	if _, found, _ := Find(back, DefaultCode); found {
		t.Error("Remove left the option")
	}
	if opts := back.IsEdns0().Option; len(opts) != 1 || opts[0].Option() != dns.EDNS0NSID {
		t.Errorf("Remove took other options too: %v", opts)
	}
}

func TestAutopathNameParse(t *testing.T) {
	f, err := NewForm("ap.k8s.io.", "Cluster.Local")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Domain("default"); got != "search.default.cluster.local.ap.k8s.io" {
		t.Errorf("Domain = %q", got)
	}
	tests := []struct {
		qname    string
		ok       bool
		base, ns string
	}{
		{"web.search.default.cluster.local.ap.k8s.io.", true, "web.", "default"},
		{"Web.SEARCH.Default.Cluster.Local.AP.k8s.io.", true, "Web.", "default"},
		{"db.otherns.search.default.cluster.local.ap.k8s.io.", true, "db.otherns.", "default"},
		{"search.search.default.cluster.local.ap.k8s.io.", true, "search.", "default"},
		{"a\\.b.search.ns-1.cluster.local.ap.k8s.io.", true, "a\\.b.", "ns-1"},
		{"google.com.search.x.cluster.local.ap.k8s.io.", true, "google.com.", "x"},
		{"search.default.cluster.local.ap.k8s.io.", false, "", ""},        // no base
		{"web.search.default.cluster.local.ap.k8s.io", false, "", ""},     // not fully qualified
		{"web.search.default.other.local.ap.k8s.io.", false, "", ""},      // another cluster
		{"web.search.default.cluster.local.ap.k8s.com.", false, "", ""},   // another suffix
		{"web.find.default.cluster.local.ap.k8s.io.", false, "", ""},      // not "search"
		{"web.search.-bad.cluster.local.ap.k8s.io.", false, "", ""},       // namespace not a label
		{"web.search.de\\.fault.cluster.local.ap.k8s.io.", false, "", ""}, // escaped dot in namespace
		{"web.search\\.default.cluster.local.ap.k8s.io.", false, "", ""},  // "search.default" is one label
		{"web.search.default.xcluster.local.ap.k8s.io.", false, "", ""},   // suffix not on a label boundary
		{"web.search.default\\.cluster.local.ap.k8s.io.", false, "", ""},  // escaped boundary
		{"cluster.local.ap.k8s.io.", false, "", ""},
		{".", false, "", ""},
		{"", false, "", ""},
	}
	for _, tc := range tests {
		got, ok := f.Parse(tc.qname)
		if ok != tc.ok || got.Base != tc.base || got.Namespace != tc.ns {
			t.Errorf("Parse(%q) = %+v, %v; want base %q ns %q, %v", tc.qname, got, ok, tc.base, tc.ns, tc.ok)
		}
	}
	want := []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example.net"}
	if got := f.PathsV1("ns", "corp.example.net"); !slices.Equal(got, want) {
		t.Errorf("PathsV1 = %q", got)
	}
	if _, ok := (Form{}).Parse("web.search.default.cluster.local.ap.k8s.io."); ok {
		t.Error("the zero Form matched")
	}
	for _, bad := range [][2]string{{"", "cluster.local"}, {"ap.k8s.io", "a..b"}, {"ap k8s", "x"}} {
		if _, err := NewForm(bad[0], bad[1]); err == nil {
			t.Errorf("NewForm(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestAutopathNameParseDoesNotAllocate(t *testing.T) {
	f, _ := NewForm("ap.k8s.io", "cluster.local")
	n := testing.AllocsPerRun(100, func() {
		if _, ok := f.Parse("web.search.default.cluster.local.ap.k8s.io."); !ok {
			t.Fatal("no match")
		}
	})
	if n != 0 {
		t.Errorf("Parse allocates %v times", n)
	}
}
