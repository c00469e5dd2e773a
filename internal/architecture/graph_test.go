package architecture

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is the module's path; rules name its packages relative to it.
const module = "github.com/schemadns/schemadns"

// graph is an import graph: each package's imports, from its non-test
// files.
type graph map[string][]string

// loadRepo lists the module's packages and everything they import (the
// standard library and other modules too, so that a rule holds
// transitively whatever a package goes through), from the module's root.
// Without -e, a package go list cannot load fails the test: a graph
// with a package's imports missing could hide a breach. It runs once per
// test binary: every test reads the same graph.
var loadRepo = sync.OnceValues(func() (graph, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	g := graph{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			g[fields[0]] = fields[1:]
		}
	}
	return g, nil
})

// repo is the module's import graph, or the test fails.
func repo(t *testing.T) graph {
	t.Helper()
	g, err := loadRepo()
	if err != nil {
		t.Fatal(err)
	}
	if len(g[module+"/coredns"]) == 0 {
		t.Fatalf("go list found no imports of %s/coredns: the graph is not the module's", module)
	}
	return g
}

// with is g plus the imports in add ("from to": from imports to), g
// itself left as it is. A package named only by add gets no imports of
// its own.
func (g graph) with(add ...string) graph {
	out := make(graph, len(g)+len(add))
	for p, imps := range g {
		out[p] = imps
	}
	for _, edge := range add {
		from, to, _ := strings.Cut(edge, " ")
		from, to = abs(from), abs(to)
		out[from] = append(slices.Clip(out[from]), to)
		if _, ok := out[to]; !ok {
			out[to] = nil
		}
	}
	return out
}

// abs is a package path as go list writes it: one whose first element
// is plugin, coredns, internal or test is the module's.
func abs(p string) string {
	first, _, _ := strings.Cut(p, "/")
	switch first {
	case "plugin", "coredns", "internal", "test":
		return module + "/" + p
	}
	return p
}

// short is a package path as a message writes it: the module's packages
// relative to the module.
func short(p string) string { return strings.TrimPrefix(p, module+"/") }

// pattern is a set of packages: "a/b" is that package, "a/b/..." it and
// those below it, "a/b*" those whose path starts so. The module's
// packages are written relative to the module (abs).
type pattern string

func (p pattern) match(pkg string) bool {
	s := abs(string(p))
	switch {
	case strings.HasSuffix(s, "/..."):
		base := strings.TrimSuffix(s, "/...")
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	case strings.HasSuffix(s, "*"):
		return strings.HasPrefix(pkg, strings.TrimSuffix(s, "*"))
	}
	return pkg == s
}

// anyMatch tells whether one of ps matches pkg.
func anyMatch(ps []pattern, pkg string) bool {
	return slices.ContainsFunc(ps, func(p pattern) bool { return p.match(pkg) })
}
