package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/coredns/plugins"
	"github.com/schemadns/schemadns/internal/childproc"
)

var coreDNS = childproc.CoreDNSBuild{Pkg: "../coredns", LDFlags: "-X main.version=v9.9.9-test"}

// coreDNSBinary builds ./coredns once per test run, stamped with a version.
func coreDNSBinary(t *testing.T) string {
	t.Helper()
	path, err := coreDNS.Path()
	if err != nil {
		t.Fatalf("build coredns: %v", err)
	}
	return path
}

// TestBinaryListsPluginsAndVersion: -plugins prints what stock CoreDNS
// 1.15 prints, caddy.DescribePlugins() (coredns/caddy v1.1.4): one plugin a
// line without the "dns." prefix, no sections, then a blank line; ours are
// listed once each. -version prints CoreDNS's version and this project's.
func TestBinaryListsPluginsAndVersion(t *testing.T) {
	bin := coreDNSBinary(t)
	out, err := exec.Command(bin, "-plugins").CombinedOutput()
	if err != nil {
		t.Fatalf("-plugins: %v\n%s", err, out)
	}
	// The test binary links the same plugins (through coredns/plugins), so
	// its registry is the binary's.
	if want := caddy.DescribePlugins() + "\n"; string(out) != want {
		t.Errorf("-plugins printed:\n%s\nwant (caddy.DescribePlugins):\n%s", out, want)
	}
	lines := strings.Split(string(out), "\n")
	for _, ours := range []string{"kubeschema", "multicluster", "gensearchpath", "edns0autopath", "k8s_external", "clusterfirst", "hold"} {
		if n := strings.Count("\n"+string(out), "\n"+ours+"\n"); n != 1 {
			t.Errorf("-plugins lists %s %d times, want once:\n%q", ours, n, lines)
		}
	}
	registered := caddy.ListPlugins()["others"]
	if !slices.IsSorted(registered) {
		t.Errorf("caddy's registry is not sorted: %q", registered)
	}
	if len(registered) != len(plugins.Directives) {
		t.Errorf("%d plugins registered, plugin.cfg has %d directives:\n%q\n%q", len(registered), len(plugins.Directives), registered, plugins.Directives)
	}
	for _, d := range plugins.Directives {
		name := "dns." + d
		if d == "on" {
			name = d
		}
		if !slices.Contains(registered, name) {
			t.Errorf("plugin.cfg's %s is not registered as %s", d, name)
		}
	}
	for _, p := range []string{"dns.kubeschema", "dns.multicluster", "dns.gensearchpath", "dns.edns0autopath", "dns.clusterfirst", "dns.hold", "dns.kubernetes", "dns.forward", "dns.cache"} {
		if !slices.Contains(registered, p) {
			t.Errorf("%s is not registered: %q", p, registered)
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
	port := freeLoopbackPort(t)
	corefile := fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    kubeschema cluster.local {\n        endpoint https://127.0.0.1:1\n        startup_timeout 1s\n    }\n}\n", port)
	p := &coreDNSProcess{dnsAddr: fmt.Sprintf("127.0.0.1:%d", port)}
	runCorefile(t, bin, corefile, p)
	var r *dns.Msg
	eventually(t, 20*time.Second, "server answers", func() bool {
		m := new(dns.Msg)
		m.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
		var err error
		r, _, err = (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, p.dnsAddr)
		return err == nil
	})
	if r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s before the cache synced, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if log := p.log(); !strings.Contains(log, "starting to serve before the API server answered (startup_timeout 1s)") ||
		!strings.Contains(log, "127.0.0.1:1") {
		t.Errorf("log does not report the unreachable API server clearly:\n%s", log)
	}
}

// TestBinaryMemoryLimitFromCgroup: in a memory cgroup of 170 MiB (kubeadm's
// limit for CoreDNS), the binary gives the Go runtime a soft limit of 90%
// of it and says so; GOMEMLIMIT set by hand is kept. The machine's
// cgroups are v1 (memory.limit_in_bytes), as the e2e node's are.
func TestBinaryMemoryLimitFromCgroup(t *testing.T) {
	bin := coreDNSBinary(t)
	dir := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("schemadns-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("a memory cgroup of our own (the tests run as root on cgroup v1): %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(fmt.Sprint(170<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	corefile := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(corefile, []byte(".:0 {\n    bind 127.0.0.1\n    whoami\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "Go memory limit 153 MiB, from the container's memory limit"},
		{[]string{"GOMEMLIMIT=100MiB"}, ""},
		{[]string{"AUTOMEMLIMIT=off"}, ""},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		cmd := exec.CommandContext(ctx, "sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" -conf "$3"`, "sh", dir, bin, corefile)
		cmd.Env = append(os.Environ(), tc.env...)
		// The process's writer locks: exec copies the output from a
		// goroutine of its own while the test reads it.
		out := &coreDNSProcess{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "the server started", func() bool { return strings.Contains(out.log(), "CoreDNS-") })
		cancel()
		_ = cmd.Wait()
		log := out.log()
		got := strings.Contains(log, "Go memory limit")
		if tc.want != "" && !strings.Contains(log, tc.want) || tc.want == "" && got {
			t.Errorf("env %v: log\n%s\nwant %q", tc.env, log, tc.want)
		}
	}
}
