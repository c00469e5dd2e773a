package architecture

import (
	"slices"
	"testing"
)

// The packages the rules name, by side. Patterns: "a/..." is a and what
// is below it, "a*" every package whose path starts so.
var (
	// kubernetesSource is the Kubernetes source: the watch cache, the
	// Kubernetes side of the schemas (kubesource) and the Kubernetes and
	// MCS APIs.
	kubernetesSource = []pattern{"plugin/pkg/watchcache/...", "plugin/pkg/kubesource/...", "k8s.io/...", "sigs.k8s.io/..."}
	// mesosSource is the Mesos source: the state (mesosstate, which bench
	// and soak import to predict names) and the master's client
	// (mesosmaster), and any Mesos package to come.
	mesosSource = []pattern{"plugin/pkg/mesos*"}
	// schemas are the plugins that make a zone of a source, and
	// k8s_external, which reads kubeschema's.
	schemas = []pattern{"plugin/kubeschema/...", "plugin/multicluster/...", "plugin/mesos*", "plugin/k8sexternal/..."}
	// servingCore is what every schema shares to serve and build.
	servingCore = []pattern{"plugin/pkg/dnszone/...", "plugin/pkg/changes/..."}
)

// rules are the architecture's rules, each checked on the module's
// non-test files (a test may import what it needs to build a fixture).
var rules = []rule{{
	id:        "core",
	name:      "the serving core and its helpers (dnszone, changes, dnsname, replies) import no source, so that any schema can use them",
	subjects:  []pattern{"plugin/pkg/dnszone/...", "plugin/pkg/changes/...", "plugin/pkg/dnsname/...", "plugin/pkg/replies/..."},
	forbidden: concat(kubernetesSource, mesosSource, schemas),
}, {
	id:        "mesos",
	name:      "no Mesos package imports the watch cache, kubesource, a Kubernetes schema or a Kubernetes API (client-go, apimachinery, MCS)",
	subjects:  []pattern{"plugin/pkg/mesos*", "plugin/mesos*"},
	forbidden: concat(kubernetesSource, []pattern{"plugin/kubeschema/...", "plugin/multicluster/...", "plugin/k8sexternal/..."}),
}, {
	id:        "kubernetes",
	name:      "no Kubernetes package imports a Mesos one",
	subjects:  []pattern{"plugin/kubeschema/...", "plugin/multicluster/...", "plugin/k8sexternal/...", "plugin/pkg/kubesource/...", "plugin/pkg/watchcache/..."},
	forbidden: []pattern{"plugin/pkg/mesos*", "plugin/mesos*"},
}, {
	// clusterfirst finds the block's zones through an interface the
	// schemas implement (dnszone.Server's ServedZones), not by import.
	id:        "edge",
	name:      "the edge plugins (clusterfirst, hold, handover, gensearchpath, edns0autopath) import no schema, no serving core and no source",
	subjects:  []pattern{"plugin/clusterfirst/...", "plugin/hold/...", "plugin/handover/...", "plugin/gensearchpath/...", "plugin/edns0autopath/..."},
	forbidden: concat(schemas, servingCore, kubernetesSource, mesosSource),
}, {
	// Direct imports only: every schema reaches the cache through
	// kubesource, whose types are the cache's (aliases). Tools and tests
	// (test/, internal/) may read the cache itself.
	id:        "watchcache",
	name:      "of the server's packages (plugin/, coredns/), only kubesource imports the watch cache: the schemas read Kubernetes in kubesource's words",
	subjects:  []pattern{"plugin/...", "coredns/..."},
	except:    []pattern{"plugin/pkg/kubesource", "plugin/pkg/watchcache/..."},
	forbidden: []pattern{"plugin/pkg/watchcache/..."},
	direct:    true,
}}

// ruleByID is the rule of that id.
func ruleByID(t *testing.T, id string) rule {
	t.Helper()
	i := slices.IndexFunc(rules, func(r rule) bool { return r.id == id })
	if i < 0 {
		t.Fatalf("no rule %q", id)
	}
	return rules[i]
}

// concat is the patterns of sets, in order.
func concat(sets ...[]pattern) []pattern { return slices.Concat(sets...) }

// TestRules holds every rule on the module as it is, and each rule's
// patterns to name packages that exist.
func TestRules(t *testing.T) {
	g := repo(t)
	for _, r := range rules {
		for _, v := range r.vacuous(g) {
			t.Errorf("rule %q checks less than it says: %s", r.name, v)
		}
		for _, v := range r.violations(g) {
			t.Errorf("rule %q broken: %s", r.name, v)
		}
	}
}
