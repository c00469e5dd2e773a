package test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/exampleapi"
)

// The demo of `make run`: hack/run.sh starts the stand-in API server
// (internal/exampleapi) on examples/ and serves Corefile.example, then
// prints dig commands. The tests here do the same in-process, on free
// ports, so that no command, example or Corefile line can drift.

const (
	runScript          = "../hack/run.sh"
	runExampleCorefile = "../Corefile.example"
	runExamples        = "../examples"
)

// startExampleAPI serves dir's objects as run.sh does, looking for edits
// every interval, and returns a kubeconfig that points at it.
func startExampleAPI(t *testing.T, dir string, interval time.Duration) string {
	t.Helper()
	api, err := exampleapi.New(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := api.Serve(ctx, l, interval); err != nil {
			t.Errorf("stand-in API server: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := exampleapi.WriteKubeconfig(kubeconfig, "http://"+l.Addr().String()); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// serveRunCorefile serves Corefile.example against the stand-in at
// kubeconfig, without its log line, with a stub for /etc/resolv.conf.
func serveRunCorefile(t *testing.T, kubeconfig string) *server {
	t.Helper()
	corefile := readFile(t, runExampleCorefile)
	if !strings.Contains(corefile, ".:1053 {") || !strings.Contains(corefile, "bind 127.0.0.1") {
		t.Fatalf("%s no longer serves 127.0.0.1:1053, where %s's commands ask", runExampleCorefile, runScript)
	}
	upstream := startStubUpstream(t)
	served := forTest(logLine.ReplaceAllString(corefile, ""), readmeEnv{kubeconfig: kubeconfig, upstream: upstream.addr})
	return startServer(t, served)
}

// TestRunDemoCommands runs every dig command hack/run.sh prints against
// Corefile.example serving examples/ from the stand-in API server: each
// answers NOERROR with records, or NXDOMAIN where its comment says so.
func TestRunDemoCommands(t *testing.T) {
	script := readFile(t, runScript)
	if !strings.Contains(script, "hack/exampleapi") || !strings.Contains(script, "-dir examples") {
		t.Fatalf("%s does not start the stand-in API server on examples/, which this test serves", runScript)
	}
	s := serveRunCorefile(t, startExampleAPI(t, runExamples, time.Second))
	checkDemoDigs(t, s, runScript, script, 20)
}

// TestRunDemoFollowsEditedExamples edits a copy of examples/ while the
// server runs, as the run script invites: a changed service address and a
// removed file reach the answers (within the TTL that the cache keeps an
// answer, 5 s; the wait allows more for a machine busy with other tests).
func TestRunDemoFollowsEditedExamples(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(runExamples, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(readFile(t, f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := serveRunCorefile(t, startExampleAPI(t, dir, 50*time.Millisecond))
	const web = "web.demo.svc.cluster.local."
	wantA(t, s, web, "10.96.100.10")

	services := filepath.Join(dir, "10-services.yaml")
	text := readFile(t, services)
	if strings.Count(text, "10.96.100.10") != 1 {
		t.Fatalf("%s: want web's clusterIP 10.96.100.10 once", services)
	}
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(services, strings.Replace(text, "10.96.100.10", "10.96.100.99", 1))
	eventually(t, 30*time.Second, "web's new address is answered", func() bool {
		return answersA(s.exchange(t, "udp", web, dns.TypeA), "10.96.100.99")
	})

	if err := os.Remove(services); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "web is gone", func() bool {
		return s.exchange(t, "udp", web, dns.TypeA).Rcode == dns.RcodeNameError
	})
}

func wantA(t *testing.T, s *server, name, addr string) {
	t.Helper()
	if r := s.exchange(t, "udp", name, dns.TypeA); !answersA(r, addr) {
		t.Fatalf("%s A: want only %s, got\n%v", name, addr, r)
	}
}

// answersA tells whether r is NOERROR with addr as its only A record.
func answersA(r *dns.Msg, addr string) bool {
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		return false
	}
	a, ok := r.Answer[0].(*dns.A)
	return ok && a.A.String() == addr
}
