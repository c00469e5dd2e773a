package test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/schemadns/schemadns/coredns/plugins"
	"github.com/schemadns/schemadns/test/kubeapi"
)

// TestReadmeCorefiles starts a server from every `~~~ corefile` block of
// every README, so the documented examples keep working. Ports become 0
// on loopback and kubeconfig paths point at the test API server; nothing
// else is changed.
func TestReadmeCorefiles(t *testing.T) {
	c := kubeapi.Shared(t)
	readmes, err := filepath.Glob("../plugin/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	readmes = append(readmes, "../README.md")
	for _, readme := range readmes {
		for i, block := range corefileBlocks(t, readme) {
			corefile := forTest(block, c.Kubeconfig)
			t.Run(filepath.Base(filepath.Dir(readme))+"/"+string(rune('a'+i)), func(t *testing.T) {
				caddyMu.Lock()
				defer caddyMu.Unlock()
				dnsserver.Directives = plugins.Directives
				dnsserver.Quiet = true
				inst, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(corefile), Filepath: readme, ServerTypeName: "dns"})
				if err != nil {
					t.Fatalf("%s block %d does not start: %v\n%s", readme, i+1, err, corefile)
				}
				inst.Stop()
				inst.ShutdownCallbacks()
			})
		}
	}
}

// corefileBlocks returns the contents of the ~~~ corefile blocks of path.
func corefileBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && (line == "~~~ corefile" || line == "```corefile"):
			cur = &strings.Builder{}
		case cur != nil && (line == "~~~" || line == "```"):
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

var (
	serverPort   = regexp.MustCompile(`(?m)^(\S*?):\d+(\s*\{)`)
	bareServer   = regexp.MustCompile(`(?m)^([a-z.]+[a-z])(\s*\{)`)
	listenAddr   = regexp.MustCompile(`(?m)^(\s*(?:prometheus|health|ready))(?:\s+\S*:\d+)?\s*$`)
	kubeconfig   = regexp.MustCompile(`(?m)^(\s*kubeconfig)\s+\S+`)
	openKubeStub = regexp.MustCompile(`(?m)^(\s*(?:kubeschema|multicluster)\b[^{\n]*\{)\s*$`)
	bareKube     = regexp.MustCompile(`(?m)^(\s*(?:kubeschema|multicluster)\b[^{\n]*)$`)
)

// forTest adapts a documented Corefile to a test machine.
func forTest(block, kc string) string {
	s := serverPort.ReplaceAllString(block, "${1}:0${2}")
	s = bareServer.ReplaceAllString(s, "${1}:0${2}")
	s = listenAddr.ReplaceAllString(s, "${1} 127.0.0.1:0")
	s = kubeconfig.ReplaceAllString(s, "${1} "+kc)
	if !strings.Contains(s, "kubeconfig") {
		s = openKubeStub.ReplaceAllString(s, "${1}\n        kubeconfig "+kc)
		s = bareKube.ReplaceAllString(s, "${1} {\n        kubeconfig "+kc+"\n    }")
	}
	return s
}
