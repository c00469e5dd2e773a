package architecture

import (
	"slices"
	"testing"
)

// breach is imports that break a rule.
type breach struct {
	// rule is the rule's id.
	rule string
	// add are the imports added, "from to" (from imports to); a package
	// not in the module's graph is made up for the case.
	add []string
	// want are breaches the rule must report (among others the imports
	// cause: a package that imports the one broken breaks it too).
	want []string
}

// breaks are imports that break a rule, each added to the module's graph
// as it is: the rule, fed the graph with them, must report (at least)
// the breaches given. Every rule has at least one (TestEveryRuleBreaks).
var breaks = []breach{
	// The serving core: a source imported directly, one reached through a
	// made-up package of another module, a source through the core's own
	// packages, a Mesos one, a schema.
	{"core", []string{"plugin/pkg/replies k8s.io/client-go/kubernetes"},
		[]string{"plugin/pkg/replies imports k8s.io/client-go/kubernetes"}},
	{"core", []string{"plugin/pkg/dnsname example.com/helper", "example.com/helper sigs.k8s.io/mcs-api/pkg/apis/v1beta1"},
		[]string{"plugin/pkg/dnsname → example.com/helper → sigs.k8s.io/mcs-api/pkg/apis/v1beta1"}},
	{"core", []string{"plugin/pkg/changes plugin/pkg/kubesource"},
		[]string{"plugin/pkg/changes imports plugin/pkg/kubesource", "plugin/pkg/dnszone → plugin/pkg/changes → plugin/pkg/kubesource"}},
	{"core", []string{"plugin/pkg/dnszone plugin/pkg/mesosstate"},
		[]string{"plugin/pkg/dnszone imports plugin/pkg/mesosstate"}},
	{"core", []string{"plugin/pkg/dnszone plugin/mesosschema"},
		[]string{"plugin/pkg/dnszone imports plugin/mesosschema"}},
	// Mesos: client-go in the state, the cache in the master's client,
	// kubesource through a helper every schema shares.
	{"mesos", []string{"plugin/pkg/mesosstate k8s.io/client-go/rest"},
		[]string{"plugin/pkg/mesosstate imports k8s.io/client-go/rest", "plugin/mesosschema → plugin/pkg/mesosstate → k8s.io/client-go/rest"}},
	{"mesos", []string{"plugin/pkg/mesosmaster plugin/pkg/watchcache"},
		[]string{"plugin/pkg/mesosmaster imports plugin/pkg/watchcache", "plugin/mesosschema → plugin/pkg/mesosmaster → plugin/pkg/watchcache"}},
	{"mesos", []string{"plugin/pkg/stanza plugin/pkg/kubesource"},
		[]string{"plugin/mesosschema → plugin/pkg/stanza → plugin/pkg/kubesource"}},
	// Kubernetes: a Mesos package from the cache (so from every schema
	// through kubesource), and from k8s_external through a made-up helper.
	{"kubernetes", []string{"plugin/pkg/watchcache plugin/pkg/mesosstate"},
		[]string{"plugin/pkg/watchcache imports plugin/pkg/mesosstate", "plugin/kubeschema → plugin/pkg/kubesource → plugin/pkg/watchcache → plugin/pkg/mesosstate"}},
	{"kubernetes", []string{"plugin/k8sexternal plugin/pkg/extra", "plugin/pkg/extra plugin/mesosschema"},
		[]string{"plugin/k8sexternal → plugin/pkg/extra → plugin/mesosschema"}},
	// The edge plugins: a schema, the serving core, a source through a
	// helper, an API package, a schema.
	{"edge", []string{"plugin/clusterfirst plugin/kubeschema"},
		[]string{"plugin/clusterfirst imports plugin/kubeschema"}},
	{"edge", []string{"plugin/hold plugin/pkg/dnszone"},
		[]string{"plugin/hold imports plugin/pkg/dnszone"}},
	{"edge", []string{"plugin/handover plugin/pkg/stanza", "plugin/pkg/stanza plugin/pkg/mesosmaster"},
		[]string{"plugin/handover → plugin/pkg/stanza → plugin/pkg/mesosmaster"}},
	{"edge", []string{"plugin/gensearchpath k8s.io/apimachinery/pkg/labels"},
		[]string{"plugin/gensearchpath imports k8s.io/apimachinery/pkg/labels"}},
	{"edge", []string{"plugin/edns0autopath plugin/multicluster"},
		[]string{"plugin/edns0autopath imports plugin/multicluster"}},
	// The watch cache from a schema, from the binary's main, and its
	// in-memory stand-in from a plugin's non-test file.
	{"watchcache", []string{"plugin/multicluster plugin/pkg/watchcache"},
		[]string{"plugin/multicluster imports plugin/pkg/watchcache"}},
	{"watchcache", []string{"plugin/kubeschema plugin/pkg/watchcache"},
		[]string{"plugin/kubeschema imports plugin/pkg/watchcache"}},
	{"watchcache", []string{"coredns plugin/pkg/watchcache"},
		[]string{"coredns imports plugin/pkg/watchcache"}},
	{"watchcache", []string{"plugin/k8sexternal plugin/pkg/watchcache/watchcachetest"},
		[]string{"plugin/k8sexternal imports plugin/pkg/watchcache/watchcachetest"}},
}

// TestRulesFailWhenBroken feeds each rule the module's graph with
// imports that break it: the rule must report the breach. The module's
// own graph passes (TestRules), so what is reported comes of the imports
// added.
func TestRulesFailWhenBroken(t *testing.T) {
	g := repo(t)
	for _, b := range breaks {
		r := ruleByID(t, b.rule)
		got := r.violations(g.with(b.add...))
		for _, want := range b.want {
			if !slices.Contains(got, want) {
				t.Errorf("rule %q with %q: got %q, want %q among them", r.name, b.add, got, want)
			}
		}
	}
}

// TestEveryRuleBreaks: a rule without a case that breaks it has not been
// seen to fail.
func TestEveryRuleBreaks(t *testing.T) {
	for _, r := range rules {
		if !slices.ContainsFunc(breaks, func(b breach) bool { return b.rule == r.id }) {
			t.Errorf("rule %q: no case in breaks breaks it", r.name)
		}
	}
}

// TestDirectRuleIsDirect: the watch cache rule counts only a package's own
// imports, since every schema reaches the cache through kubesource; and a
// rule's exceptions hold.
func TestDirectRuleIsDirect(t *testing.T) {
	r := ruleByID(t, "watchcache")
	g := graph{}.with(
		"plugin/multicluster plugin/pkg/kubesource",
		"plugin/pkg/kubesource plugin/pkg/watchcache",
		"plugin/pkg/watchcache/watchcachetest plugin/pkg/watchcache",
	)
	if got := r.violations(g); len(got) != 0 {
		t.Errorf("violations = %q, want none", got)
	}
}
