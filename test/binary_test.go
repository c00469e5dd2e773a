package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// coreDNSBinary builds ./coredns once per test run, stamped with a version.
func coreDNSBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "schemadns-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "coredns")
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version=v9.9.9-test", "-o", binPath, "../coredns")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build coredns: %v", buildErr)
	}
	return binPath
}

func TestBinaryListsPluginsAndVersion(t *testing.T) {
	bin := coreDNSBinary(t)
	out, err := exec.Command(bin, "-plugins").CombinedOutput()
	if err != nil {
		t.Fatalf("-plugins: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		listed[strings.TrimSpace(line)] = true
	}
	for _, p := range []string{"kubeschema", "multicluster", "edns0autopath", "gensearchpath", "kubernetes", "forward", "cache"} {
		if !listed[p] {
			t.Errorf("-plugins does not list %s:\n%s", p, out)
		}
	}
	out, err = exec.Command(bin, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("-version: %v\n%s", err, out)
	}
	if first := strings.SplitN(string(out), "\n", 2)[0]; first != "CoreDNS-1.15.0 (schemadns v9.9.9-test)" {
		t.Errorf("-version first line = %q", first)
	}
}

// TestBinaryRejectsBadCorefiles: start-up stops with the file, the line
// and the problem.
func TestBinaryRejectsBadCorefiles(t *testing.T) {
	bin := coreDNSBinary(t)
	for _, tc := range []struct{ body, want string }{
		{".:0 {\n    kubeschema {\n        frobnicate\n    }\n}\n", `Corefile:3 - Error during parsing: unknown property "frobnicate"`},
		{".:0 {\n    kubeschema {\n        kubeconfig\n    }\n}\n", "Corefile:3 - Error during parsing: Wrong argument count"},
		{".:0 {\n    kubeschema not..a.zone\n}\n", "Corefile:2 - Error during parsing: zone \"not..a.zone\" is not a domain name"},
		{".:0 {\n    kubeschema {\n        kubeconfig /nonexistent/kubeconfig\n    }\n}\n", "Corefile:3 - Error during parsing: unreadable file: open /nonexistent/kubeconfig"},
	} {
		dir := t.TempDir()
		cf := filepath.Join(dir, "Corefile")
		if err := os.WriteFile(cf, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, bin, "-conf", cf).CombinedOutput()
		cancel()
		if err == nil {
			t.Errorf("%q: started, want an error", tc.body)
			continue
		}
		if !strings.Contains(string(out), cf[:len(cf)-len("Corefile")]) || !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: output %q, want the path and %q", tc.body, out, tc.want)
		}
	}
}

// TestBinaryServesAfterStartupTimeoutWhenAPIUnreachable: an API server
// that cannot be reached is reported, and serving starts anyway after the
// startup timeout (SERVFAIL for cluster names, not ready).
func TestBinaryServesAfterStartupTimeoutWhenAPIUnreachable(t *testing.T) {
	bin := coreDNSBinary(t)
	dir := t.TempDir()
	cf := filepath.Join(dir, "Corefile")
	corefile := ".:25353 {\n    bind 127.0.0.1\n    ready 127.0.0.1:28181\n    kubeschema cluster.local {\n        endpoint https://127.0.0.1:1\n        startup_timeout 1s\n    }\n}\n"
	if err := os.WriteFile(cf, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-conf", cf)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &server{UDP: "127.0.0.1:25353", TCP: "127.0.0.1:25353"}
	var r *dns.Msg
	eventually(t, 20*time.Second, "server answers", func() bool {
		m := new(dns.Msg)
		m.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
		var err error
		r, _, err = (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, s.UDP)
		return err == nil
	})
	if r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s before the cache synced, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if !strings.Contains(out.String(), "starting to serve before the API server answered (startup_timeout 1s)") ||
		!strings.Contains(out.String(), "127.0.0.1:1") {
		t.Errorf("log does not report the unreachable API server clearly:\n%s", out.String())
	}
}
