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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-state", "../../../../examples/mesos/state.json"}, pw)
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
	if _, err := mesosstate.Decode(body); err != nil {
		t.Fatalf("served state: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"extra"}, {"-state", "/does/not/exist"}, {"-listen", "0.0.0.0:0"}} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
