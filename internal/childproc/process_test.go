package childproc

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a sink destination the test reads while the child writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStartKill: output lands prefixed in the sink and in the tail, an
// unfinished last line included once the child is gone, and Kill ends the
// whole group (the shell's sleep too).
func TestStartKill(t *testing.T) {
	out := &lockedBuffer{}
	p, err := Start("child", "/bin/sh", []string{"-c", "echo one; echo two >&2; printf three; sleep 60 & wait"}, NewSink(out))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "child: two\n") {
		if time.Now().After(deadline) {
			t.Fatalf("sink = %q, want both lines", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Exited(); err != nil {
		t.Fatalf("Exited while running: %v", err)
	}
	begin := time.Now()
	p.Kill()
	if time.Since(begin) > 5*time.Second {
		t.Errorf("Kill took %s", time.Since(begin))
	}
	if err := p.Exited(); err == nil || !strings.Contains(err.Error(), "child exited") {
		t.Errorf("Exited after Kill = %v", err)
	}
	if got := out.String(); !strings.Contains(got, "child: one\n") || !strings.Contains(got, "child: three\n") {
		t.Errorf("sink = %q, want every line prefixed", got)
	}
	if tail := p.Tail(); !strings.Contains(tail, "one") || !strings.HasSuffix(tail, "three") {
		t.Errorf("Tail = %q", tail)
	}
}

// TestTailRing keeps only the last tailLines lines, oldest first.
func TestTailRing(t *testing.T) {
	w := &lineWriter{sink: NewSink(&bytes.Buffer{}), prefix: "x: "}
	for i := range tailLines + 5 {
		_, _ = w.Write([]byte(strings.Repeat("l", i+1) + "\n"))
	}
	lines := strings.Split(w.tail(), "\n")
	if len(lines) != tailLines || lines[0] != strings.Repeat("l", 6) || lines[tailLines-1] != strings.Repeat("l", tailLines+5) {
		t.Errorf("tail = %d lines from %q to %q", len(lines), lines[0], lines[len(lines)-1])
	}
}
