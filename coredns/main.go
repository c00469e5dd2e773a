// Command coredns is CoreDNS with the schemadns plugins compiled in. The set
// of plugins and their chain order come from plugin.cfg at the top of the
// repository; package plugins is generated from it.
package main

//go:generate go run ./gen -cfg ../plugin.cfg -out plugins/zplugins.go

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	"github.com/schemadns/schemadns/coredns/plugins"
)

// version is the schemadns release, set at build time with
// -ldflags "-X main.version=...".
var version = "dev"

func main() {
	dnsserver.Directives = plugins.Directives
	if wantsPluginList(os.Args[1:]) {
		writePluginList(os.Stdout, caddy.ListPlugins())
		return
	}
	// coremain prints caddy.AppVersion for -version and at start-up, so the
	// project's version rides along with CoreDNS's.
	caddy.AppVersion = coremain.CoreVersion + " (schemadns " + version + ")"
	coremain.Run()
}

// wantsPluginList tells whether the flags ask for -plugins (as the flag
// package reads them: one or two dashes, or =true).
func wantsPluginList(args []string) bool {
	for _, a := range args {
		switch strings.TrimLeft(a, "-") {
		case "plugins", "plugins=true", "plugins=1":
			return strings.HasPrefix(a, "-")
		}
	}
	return false
}

// pluginSections are the sections of the list, in order, with their titles:
// caddy's registry by kind, the dns server type's plugins as "dns.<name>".
var pluginSections = []struct{ key, title string }{
	{"server_types", "Server types"},
	{"caddyfile_loaders", "Caddyfile loaders"},
	{"event_hooks", "Event hook plugins"},
	{"others", "Other plugins"},
}

// writePluginList prints the registry the way caddy's sectioned listing
// does (and scripts parse): a title per kind, then its names indented,
// a blank line between sections.
func writePluginList(w io.Writer, registry map[string][]string) {
	first := true
	for _, s := range pluginSections {
		names := registry[s.key]
		if len(names) == 0 {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		fmt.Fprintf(w, "%s:\n", s.title)
		for _, n := range names {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}
