package test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// startClusterDNS runs the cluster DNS Corefile of deploy/ on loopback:
// the edits are only those that put it on free loopback ports, point it at
// the test's API server and upstream; each edit must apply, so a change to
// the Corefile that this test no longer understands fails it.
func startClusterDNS(t *testing.T, bin, corefile, kubeconfig, upstream string) *coreDNSProcess {
	t.Helper()
	dnsPort, readyPort, metricsPort := freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t)
	cf := editCorefile(t, corefile, []edit{
		{".:53 {\n", fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n", dnsPort)},
		{"    health {\n", "    health 127.0.0.1:0 {\n"},
		{"    ready\n", fmt.Sprintf("    ready 127.0.0.1:%d\n", readyPort)},
		{"    prometheus :9153\n", fmt.Sprintf("    prometheus 127.0.0.1:%d\n", metricsPort)},
		{"    kubeschema cluster.local in-addr.arpa ip6.arpa {\n", "    kubeschema cluster.local in-addr.arpa ip6.arpa {\n        kubeconfig " + kubeconfig + "\n"},
		{"    forward . /etc/resolv.conf {\n", "    forward . " + upstream + " {\n"},
	})
	if strings.Contains(cf, "    multicluster clusterset.local") {
		cf = editCorefile(t, cf, []edit{{"    multicluster clusterset.local in-addr.arpa ip6.arpa {\n",
			"    multicluster clusterset.local in-addr.arpa ip6.arpa {\n        kubeconfig " + kubeconfig + "\n"}})
	}
	p := &coreDNSProcess{
		dnsAddr:    fmt.Sprintf("127.0.0.1:%d", dnsPort),
		readyURL:   fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
	}
	runCorefile(t, bin, cf, p)
	return p
}

// edit replaces the one occurrence of old with new.
type edit struct{ old, new string }

func editCorefile(t *testing.T, corefile string, edits []edit) string {
	t.Helper()
	for _, e := range edits {
		if n := strings.Count(corefile, e.old); n != 1 {
			t.Fatalf("the Corefile has %q %d times, want once:\n%s", e.old, n, corefile)
		}
		corefile = strings.Replace(corefile, e.old, e.new, 1)
	}
	return corefile
}

// runCorefile starts bin on corefile, its output going to p, and stops it
// when the test ends.
func runCorefile(t *testing.T, bin, corefile string, p *coreDNSProcess) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-conf", path)
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("Corefile:\n%s\nlog:\n%s", corefile, p.log())
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
