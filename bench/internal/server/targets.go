package server

import (
	"fmt"
	"strings"
)

// Target is one server configuration under test.
type Target struct {
	Key   string // its name in the tables: kubeschema, stock, floor, …
	Label string // what it is
	// Stanza is the server block's plugins, given where they read their
	// data: a kubeconfig, a Mesos master's host:port, a zone file.
	Stanza func(source string) string
	// Kube is true for targets that serve the Kubernetes data (and are
	// waited for until synced); MC for those that serve clusterset.local.
	Kube, MC bool
}

// The targets' keys.
const (
	KeyOurs    = "kubeschema"
	KeyStock   = "stock"
	KeyFloor   = "floor"
	KeyOursMC  = "kubeschema+multicluster"
	KeyStockMC = "stock+multicluster"
)

// The targets: ours and stock with the same options, the framework's floor,
// and the same pair serving clusterset.local too.
var (
	TargetOurs, TargetStock = KubeTargets("verified")
	TargetFloor             = Target{Key: KeyFloor, Label: "the framework's floor: a server block with only whoami",
		Stanza: func(string) string { return "whoami" }}
	TargetOursMC = Target{Key: KeyOursMC, Label: "kubeschema and multicluster in one server block (ours)", Kube: true, MC: true,
		Stanza: func(kc string) string {
			return kubeStanza("kubeschema", kubeZones, kc, "verified", "fallthrough in-addr.arpa ip6.arpa") + "\n    " +
				kubeStanza("multicluster", "clusterset.local in-addr.arpa ip6.arpa", kc, "", "")
		}}
	TargetStockMC = Target{Key: KeyStockMC, Label: "CoreDNS's own kubernetes plugin with `multicluster clusterset.local`", Kube: true, MC: true,
		Stanza: func(kc string) string {
			return kubeStanza("kubernetes", "cluster.local clusterset.local in-addr.arpa ip6.arpa", kc, "verified", "multicluster clusterset.local")
		}}
)

// kubeZones are the zones ours and stock serve.
const kubeZones = "cluster.local in-addr.arpa ip6.arpa"

// KubeTargets are ours and stock with the given pods option: verified on
// every shape, and also disabled (no pod watch) on the threshold shape.
func KubeTargets(pods string) (ours, stock Target) {
	ours = Target{Key: KeyOurs, Label: "kubeschema (ours)", Kube: true,
		Stanza: func(kc string) string { return kubeStanza("kubeschema", kubeZones, kc, pods, "") }}
	stock = Target{Key: KeyStock, Label: "CoreDNS's own kubernetes plugin, compiled into the same binary", Kube: true,
		Stanza: func(kc string) string { return kubeStanza("kubernetes", kubeZones, kc, pods, "") }}
	return ours, stock
}

// kubeStanza is a plugin stanza with the options both Kubernetes plugins
// get: a kubeconfig and the pods option (none for multicluster, which
// takes no pods option).
func kubeStanza(plugin, zones, kubeconfig, pods, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s {\n        kubeconfig %s\n", plugin, zones, kubeconfig)
	if pods != "" {
		fmt.Fprintf(&b, "        pods %s\n", pods)
	}
	if extra != "" {
		fmt.Fprintf(&b, "        %s\n", extra)
	}
	b.WriteString("    }")
	return b.String()
}

// corefile is a target's Corefile: the block under test alone on its port,
// and the pprof listener (heap figures, forced GC, profiles) and the
// metrics one in a block of their own, so that no plugin but the one
// measured is in the query path.
func corefile(t Target, source string, port, admin, pprof, metrics int) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    %s
}
.:%d {
    bind 127.0.0.1
    pprof 127.0.0.1:%d
    prometheus 127.0.0.1:%d
}
`, port, t.Stanza(source), admin, pprof, metrics)
}
