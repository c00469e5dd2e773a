package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

func TestRun(t *testing.T) {
	st := serve(t, "-listen", "127.0.0.1:0", "-state", "../../../../examples/mesos/state.json")
	if st.Leader != "master@10.0.0.11:5050" {
		t.Errorf("leader %q, want the recorded one", st.Leader)
	}
}

// TestRunOwn: with -own the recorded state names the serving master as
// the leader.
func TestRunOwn(t *testing.T) {
	st := serve(t, "-listen", "127.0.0.1:0", "-own", "-state", "../../../../examples/mesos/state.json")
	if !strings.HasPrefix(st.Leader, "master@127.0.0.1:") || st.PID != st.Leader || len(st.Frameworks) != 4 {
		t.Errorf("leader %q, pid %q, %d frameworks; want this master and the recorded frameworks", st.Leader, st.PID, len(st.Frameworks))
	}
}

// serve runs the command with args, fetches its state once and stops it.
func serve(t *testing.T, args ...string) *mesosstate.State {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("output: %q, %v", line, err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "mesosmaster: serving ")
	if !ok {
		t.Fatalf("output: %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	st, err := mesosstate.Decode(body)
	if err != nil {
		t.Fatalf("served state: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"extra"}, {"-state", "/does/not/exist"}, {"-listen", "0.0.0.0:0"},
		{"-own", "-state", "main.go"}} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
