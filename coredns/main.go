// Command coredns is CoreDNS with the schemadns plugins compiled in. The set
// of plugins and their chain order come from plugin.cfg at the top of the
// repository; package plugins is generated from it.
package main

//go:generate go run ./gen -cfg ../plugin.cfg -directives-out plugins/zdirectives.go -out plugins/zplugins.go -run-corefiles ../Corefile.example,../Corefile.mesos -run-out plugins/zplugins_run.go

import (
	"os"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	"github.com/schemadns/schemadns/coredns/plugins"
	"github.com/schemadns/schemadns/plugin/handover"
)

// version is the schemadns release, set at build time with
// -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// `coredns -handover-probe SOCKET` is the node-local cache's exec
	// readiness probe (the image has no shell): it asks this very pod's
	// process, through handover's self_ready socket, and exits.
	if code, ran := handover.ProbeMain(os.Args[1:], os.Stderr); ran {
		os.Exit(code)
	}
	dnsserver.Directives = plugins.Directives
	// coremain handles -plugins as stock CoreDNS does (caddy's
	// DescribePlugins: one plugin a line, no "dns." prefix), and prints
	// caddy.AppVersion for -version and at start-up, so the project's
	// version rides along with CoreDNS's, in the shape stock's own builds
	// between tags print ("CoreDNS-1.15.0 (...)").
	caddy.AppVersion = coremain.CoreVersion + " (schemadns " + version + ")"
	setMemoryLimit()
	coremain.Run()
}
