package dnszone

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoreKnowsNoSource: the serving core, and everything of this module
// it imports (changes, dnsname, replies), imports neither the watch cache
// nor any Kubernetes or MCS package, so that any schema (Mesos included)
// can use it. Only its non-test files count.
func TestCoreKnowsNoSource(t *testing.T) {
	const module = "github.com/schemadns/schemadns/"
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"k8s.io/", "sigs.k8s.io/", module + "plugin/pkg/watchcache", module + "plugin/pkg/kubesource"}
	seen := map[string]bool{}
	var visit func(pkg, from string)
	visit = func(pkg, from string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		p, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(pkg, module)), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			for _, f := range forbidden {
				if strings.HasPrefix(imp, f) {
					t.Errorf("%s imports %s (reached from %s)", pkg, imp, from)
				}
			}
			if strings.HasPrefix(imp, module) {
				visit(imp, pkg)
			}
		}
	}
	visit(module+"plugin/pkg/dnszone", "the test")
	if !seen[module+"plugin/pkg/changes"] {
		t.Errorf("dnszone no longer imports changes: the test checks less than it says (seen %v)", seen)
	}
}
