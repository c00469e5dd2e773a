package handover

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// otherReadyEnv makes the test binary the other pod's process: a ready
// listener that always says 200, on the address the variable names.
const otherReadyEnv = "HANDOVER_TEST_OTHER_READY"

func TestMain(m *testing.M) {
	if addr := os.Getenv(otherReadyEnv); addr != "" {
		serveOtherReady(addr)
		return
	}
	os.Exit(m.Run())
}

// serveOtherReady answers 200 on addr until its stdin closes (the test
// that started it ended).
func serveOtherReady(addr string) {
	lc := reusePortConfig()
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("listening")
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "OK") }))
	io.Copy(io.Discard, os.Stdin)
}

// startOtherProcess runs serveOtherReady in a process of its own.
func startOtherProcess(t *testing.T, addr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), otherReadyEnv+"="+addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "listening\n" {
		t.Fatalf("the other process: %q %v", line, err)
	}
}

// TestSelfReady: two processes' ready listeners share an address, as the
// old and the new node-local pod's do. This one is not ready, the other
// is. An HTTP probe of the address gets the other's 200 for some of its
// tries; self_ready answers for this process only, every time: not ready,
// then ready once this one is.
func TestSelfReady(t *testing.T) {
	var ready atomic.Bool
	lc := reusePortConfig()
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	startOtherProcess(t, addr)

	ok := 0
	for range 20 {
		if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ok++
			}
		}
	}
	if ok == 0 {
		t.Fatal("the other process answered none of 20 plain HTTP probes: the address is not shared")
	}

	sr := &selfReady{path: filepath.Join(t.TempDir(), "ready.sock"), addr: addr, owns: ownsInode}
	if err := sr.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sr.stop() })
	for i := range 20 {
		if err := Probe(sr.path, 3*time.Second); err == nil || err.Error() != "handover probe: not ready: 503 Service Unavailable" {
			t.Fatalf("probe %d while this process is not ready: %v (plain HTTP probes: %d of 20 said ready)", i, err, ok)
		}
	}
	ready.Store(true)
	for i := range 20 {
		if err := Probe(sr.path, 3*time.Second); err != nil {
			t.Fatalf("probe %d once this process is ready: %v", i, err)
		}
	}
	if code, ran := ProbeMain([]string{ProbeFlag, sr.path}, io.Discard); !ran || code != 0 {
		t.Errorf("ProbeMain: exit %d, ran %v; want 0, true", code, ran)
	}
}

// TestProbeMain: the binary's flag, and a socket nobody serves.
func TestProbeMain(t *testing.T) {
	if _, ran := ProbeMain([]string{"-conf", "Corefile"}, io.Discard); ran {
		t.Error("ProbeMain ran for CoreDNS's own flags")
	}
	if code, ran := ProbeMain([]string{ProbeFlag, filepath.Join(t.TempDir(), "none.sock")}, io.Discard); !ran || code != 1 {
		t.Errorf("ProbeMain on a missing socket: exit %d, ran %v; want 1, true", code, ran)
	}
}

// TestSelfReadyRestart: a second instance (a reload) takes the socket
// over, and the first one's stop does not remove it.
func TestSelfReadyRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ready.sock")
	first := &selfReady{path: path, addr: "127.0.0.1:1", owns: ownsInode}
	second := &selfReady{path: path, addr: "127.0.0.1:1", owns: ownsInode}
	if err := first.start(); err != nil {
		t.Fatal(err)
	}
	if err := second.start(); err != nil {
		t.Fatal(err)
	}
	first.stop()
	t.Cleanup(func() { second.stop() })
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("after the old instance stopped: %v", err)
	}
	c.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v %v, want 0600", fi.Mode().Perm(), err)
	}
}
