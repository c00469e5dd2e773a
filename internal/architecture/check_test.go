package architecture

import (
	"fmt"
	"slices"
	"strings"
)

// rule is one "these packages never import those".
type rule struct {
	// id names the rule in breaks_test.go.
	id string
	// name is the rule as docs/architecture.md states it.
	name string
	// subjects are the packages the rule is about (their non-test files).
	subjects []pattern
	// except are subjects the rule does not hold for; the table says why.
	except []pattern
	// forbidden are the packages a subject must not import.
	forbidden []pattern
	// direct: only a subject's own imports count. Otherwise a forbidden
	// package reached through any chain of imports (the module's, another
	// module's, the standard library's) breaks the rule too.
	direct bool
}

// violations are the rule's breaches in g, sorted: "a imports b" for a
// direct import, "a → x → b" for one reached through others. A chain is
// not followed past a forbidden package: one breach is reported once,
// not with everything the forbidden package imports in turn.
func (r rule) violations(g graph) []string {
	var out []string
	for _, pkg := range r.subjectsIn(g) {
		if r.direct {
			for _, imp := range g[pkg] {
				if anyMatch(r.forbidden, imp) {
					out = append(out, short(pkg)+" imports "+short(imp))
				}
			}
			continue
		}
		out = append(out, r.reached(g, pkg)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subjectsIn are the packages of g the rule is about.
func (r rule) subjectsIn(g graph) []string {
	var out []string
	for pkg := range g {
		if anyMatch(r.subjects, pkg) && !anyMatch(r.except, pkg) {
			out = append(out, pkg)
		}
	}
	slices.Sort(out)
	return out
}

// reached walks g from pkg, breadth first (so each chain reported is a
// shortest one), and reports each forbidden package it reaches.
func (r rule) reached(g graph, pkg string) []string {
	from := map[string]string{pkg: ""}
	queue := []string{pkg}
	var out []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, seen := from[imp]; seen {
				continue
			}
			from[imp] = p
			if anyMatch(r.forbidden, imp) {
				out = append(out, chain(from, imp))
				continue
			}
			queue = append(queue, imp)
		}
	}
	return out
}

// chain writes the imports that led to pkg, from the subject.
func chain(from map[string]string, pkg string) string {
	var path []string
	for p := pkg; p != ""; p = from[p] {
		path = append(path, short(p))
	}
	slices.Reverse(path)
	if len(path) == 2 {
		return path[0] + " imports " + path[1]
	}
	return strings.Join(path, " → ")
}

// vacuous says what of the rule matches nothing in g: a rule whose
// subjects, exceptions or forbidden packages were renamed away would
// pass while checking nothing.
func (r rule) vacuous(g graph) []string {
	var out []string
	for _, set := range []struct {
		what string
		ps   []pattern
	}{{"subject", r.subjects}, {"exception", r.except}, {"forbidden package", r.forbidden}} {
		for _, p := range set.ps {
			if !g.has(p) {
				out = append(out, fmt.Sprintf("the %s %s matches no package", set.what, p))
			}
		}
	}
	return out
}

// has tells whether some package of g matches p.
func (g graph) has(p pattern) bool {
	for pkg := range g {
		if p.match(pkg) {
			return true
		}
	}
	return false
}
