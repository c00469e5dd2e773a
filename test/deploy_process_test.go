package test

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// The binary run from a Corefile of deploy/, on loopback, with its log.

// coreDNSProcess is the binary running a Corefile, with its log.
type coreDNSProcess struct {
	// metricsURL (its /metrics) is set by startClusterDNS only.
	dnsAddr, readyURL, metricsURL string
	mu                            sync.Mutex
	out                           bytes.Buffer
}

func (p *coreDNSProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *coreDNSProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// config is what a workload mounts from its ConfigMap: file name to
// content, the Corefile and the files it imports.
type config map[string]string

// String lists the files in name order, each under its name.
func (c config) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(c)) {
		fmt.Fprintf(&b, "--- %s\n%s", name, c[name])
	}
	return b.String()
}

// startClusterDNS runs the cluster DNS config of deploy/ on loopback: the
// edits are only those that put it on free loopback ports, point it at
// the test's API server and upstream; each edit must apply, so a change to
// the config that this test no longer understands fails it.
func startClusterDNS(t *testing.T, bin string, files config, kubeconfig, upstream string) *coreDNSProcess {
	t.Helper()
	dnsPort, readyPort, metricsPort := freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t)
	files = editConfig(t, files, append([]edit{
		{".:53 {\n", fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n", dnsPort)},
		{"    health {\n", "    health 127.0.0.1:0 {\n"},
		{"    ready\n", fmt.Sprintf("    ready 127.0.0.1:%d\n", readyPort)},
		{"    prometheus :9153\n", fmt.Sprintf("    prometheus 127.0.0.1:%d\n", metricsPort)},
		{"    forward . /etc/resolv.conf {\n", "    forward . " + upstream + " {\n"},
	}, kubeconfigEdits(files, kubeconfig)...))
	p := &coreDNSProcess{
		dnsAddr:    fmt.Sprintf("127.0.0.1:%d", dnsPort),
		readyURL:   fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
	}
	runConfig(t, bin, files, p)
	return p
}

// kubeconfigEdits give the plugins of the cluster DNS config that watch
// the API server the test's kubeconfig: kubeschema, and multicluster where
// a component imports it.
func kubeconfigEdits(files config, kubeconfig string) []edit {
	edits := []edit{{"    kubeschema cluster.local in-addr.arpa ip6.arpa {\n",
		"    kubeschema cluster.local in-addr.arpa ip6.arpa {\n        kubeconfig " + kubeconfig + "\n"}}
	const mc = "multicluster clusterset.local in-addr.arpa ip6.arpa {\n"
	for _, content := range files {
		if strings.Contains(content, mc) {
			edits = append(edits, edit{mc, mc + "    kubeconfig " + kubeconfig + "\n"})
		}
	}
	return edits
}

// edit replaces the one occurrence of old with new.
type edit struct{ old, new string }

// editConfig applies each edit to the one file that has its old text, once;
// it fails the test when the text is not in exactly one place.
func editConfig(t *testing.T, files config, edits []edit) config {
	t.Helper()
	out := maps.Clone(files)
	for _, e := range edits {
		var where []string
		for name, content := range out {
			for range strings.Count(content, e.old) {
				where = append(where, name)
			}
		}
		if len(where) != 1 {
			t.Fatalf("the config has %q %d times (in %q), want once:\n%s", e.old, len(where), where, out)
		}
		out[where[0]] = strings.Replace(out[where[0]], e.old, e.new, 1)
	}
	return out
}

// runCorefile starts bin on corefile, its output going to p, and stops it
// when the test ends.
func runCorefile(t *testing.T, bin, corefile string, p *coreDNSProcess) {
	t.Helper()
	runConfig(t, bin, config{"Corefile": corefile}, p)
}

// runConfig writes files into one directory as the kubelet mounts a
// ConfigMap volume (each a link through ..data into a directory of the
// version), and starts bin on its Corefile, which finds the files it
// imports beside it; its output goes to p. It stops it when the test ends.
func runConfig(t *testing.T, bin string, files config, p *coreDNSProcess) {
	t.Helper()
	dir := t.TempDir()
	const version = "..2026_01_01_00_00_00.000000001"
	if err := os.Mkdir(filepath.Join(dir, version), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(version, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, version, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-conf", filepath.Join(dir, "Corefile"))
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("config:\n%s\nlog:\n%s", files, p.log())
		}
	})
}

// readyStatus is the HTTP status of /ready, 0 when it does not answer.
func (p *coreDNSProcess) readyStatus() int {
	resp, err := (&http.Client{Timeout: time.Second}).Get(p.readyURL)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady waits for /ready to answer 200 (ready) or, for !ready, checks
// that it answers and keeps failing for three seconds.
func (p *coreDNSProcess) waitReady(t *testing.T, ready bool) {
	t.Helper()
	if ready {
		eventually(t, 30*time.Second, "/ready answers 200", func() bool { return p.readyStatus() == http.StatusOK })
		return
	}
	eventually(t, 30*time.Second, "/ready answers", func() bool { return p.readyStatus() != 0 })
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if s := p.readyStatus(); s == http.StatusOK {
			t.Fatalf("/ready answered 200 without the permission")
		}
	}
}

// expectAnswer waits for the server to answer name (A) and checks the
// rcode and, when want is set, the one answer record.
func (p *coreDNSProcess) expectAnswer(t *testing.T, name string, rcode int, want string) {
	t.Helper()
	var r *dns.Msg
	eventually(t, 30*time.Second, "the server answers "+name, func() bool {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		var err error
		r, _, err = (&dns.Client{Timeout: time.Second}).Exchange(m, p.dnsAddr)
		// A message without the QR flag is no reply: the query itself,
		// come back before the server bound its port.
		return err == nil && r.Response
	})
	if r.Rcode != rcode {
		t.Fatalf("%s: rcode %s, want %s\n%s", name, dns.RcodeToString[r.Rcode], dns.RcodeToString[rcode], r)
	}
	if want != "" {
		if got := strings.TrimSpace(rrStrings(r.Answer)); got != want {
			t.Errorf("%s: answer\n%s\nwant\n%s", name, got, want)
		}
	} else if len(r.Answer) != 0 {
		t.Errorf("%s: answer %s, want none", name, rrStrings(r.Answer))
	}
}
