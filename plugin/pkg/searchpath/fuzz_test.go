package searchpath

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// FuzzAutopathOption: any option value either parses to paths that satisfy the
// grammar and format back to the same octets, or is rejected; never a
// panic, never more paths than the limit.
func FuzzAutopathOption(f *testing.F) {
	for _, s := range []string{"default.svc.cluster.local,svc.cluster.local,cluster.local", "a", "", ",", "a,", ",a", "a,,b",
		"a.", ".", "a..b", "a, b", "a\\.b", "_x.y-z", strings.Repeat("a,", 8) + "a", strings.Repeat("a", 64), "\xff", "a\x00b"} {
		f.Add([]byte(s), 8)
	}
	f.Fuzz(func(t *testing.T, value []byte, max int) {
		max %= 64
		paths, err := Parse(value, max)
		if err != nil {
			if paths != nil {
				t.Fatalf("Parse(%q): paths %q with error %v", value, paths, err)
			}
			return
		}
		if len(paths) == 0 || (max > 0 && len(paths) > max) {
			t.Fatalf("Parse(%q, %d): %d paths", value, max, len(paths))
		}
		for _, p := range paths {
			if err := CheckPath(p); err != nil {
				t.Fatalf("Parse(%q) returned the invalid path %q: %v", value, p, err)
			}
			name := p + "."
			if _, ok := dns.IsDomainName(name); !ok || WireLen(name) > 255 {
				t.Fatalf("Parse(%q) returned %q, not a domain name", value, p)
			}
		}
		back, err := Format(paths)
		if err != nil || string(back) != string(value) {
			t.Fatalf("Format(Parse(%q)) = %q, %v", value, back, err)
		}
	})
}

// FuzzAutopathName: a name either is not in the search form, or splits into
// a base and a namespace that put back together give the name again.
func FuzzAutopathName(f *testing.F) {
	for _, s := range []string{"web.search.default.cluster.local.ap.k8s.io.", "search.default.cluster.local.ap.k8s.io.",
		"a.search.x.cluster.local.ap.k8s.io", "a\\.search.x.cluster.local.ap.k8s.io.", "a.search.x\\.y.cluster.local.ap.k8s.io.",
		"A.SEARCH.NS.CLUSTER.LOCAL.AP.K8S.IO.", "\\\\.search.ns.cluster.local.ap.k8s.io.", ".", "", "..", "x.search..cluster.local.ap.k8s.io."} {
		f.Add(s)
	}
	form, err := NewForm("ap.k8s.io", "cluster.local")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, qname string) {
		n, ok := form.Parse(qname)
		if !ok {
			return
		}
		if n.Base == "" || n.Base == "." || !dns.IsFqdn(n.Base) {
			t.Fatalf("Parse(%q): base %q", qname, n.Base)
		}
		if _, ok := dns.IsDomainName(n.Base); !ok {
			t.Fatalf("Parse(%q): base %q is not a name", qname, n.Base)
		}
		if !strings.EqualFold(n.Base+form.Domain(n.Namespace)+".", qname) {
			t.Fatalf("Parse(%q) = %+v, which does not put back together", qname, n)
		}
		if n.Namespace != strings.ToLower(n.Namespace) || CheckPath(n.Namespace) != nil || strings.Contains(n.Namespace, ".") {
			t.Fatalf("Parse(%q): namespace %q", qname, n.Namespace)
		}
		for _, p := range form.PathsV1(n.Namespace) {
			if _, err := Join(n.Base, p); err != nil {
				t.Fatalf("Parse(%q): a v1 path does not fit: %v", qname, err)
			}
		}
	})
}
