// Package childproc runs the real servers that integration tests start
// (etcd, kube-apiserver, ZooKeeper): each in its own process group that dies
// with the test binary, its output split into lines, prefixed with its name
// into a log shared with its siblings, and its last lines kept for error
// messages.
package childproc

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// Process is one running child.
type Process struct {
	name string
	cmd  *exec.Cmd
	out  *lineWriter
	done chan struct{} // closed once the process has exited and out is flushed
	err  error         // how it exited; read only after done is closed
}

// Start starts bin in its own process group (so Kill reaches anything it
// forks) with its output prefixed by name into sink.
func Start(name, bin string, args []string, sink *Sink) (*Process, error) {
	p := &Process{name: name, done: make(chan struct{})}
	p.out = &lineWriter{sink: sink, prefix: name + ": "}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = Attr()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go p.wait()
	return p, nil
}

// wait reaps the process and records how it ended.
func (p *Process) wait() {
	p.err = p.cmd.Wait()
	p.out.flush()
	close(p.done)
}

// Exited reports the exit error, or nil while the process runs.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return fmt.Errorf("%s exited", p.name)
		}
		return fmt.Errorf("%s exited: %w", p.name, p.err)
	default:
		return nil
	}
}

// Kill kills the process group at once and waits for the exit. An abrupt
// kill is what tests of an outage want, and the data it could lose lives in a
// directory about to be removed. A nil Process is already gone.
func (p *Process) Kill() {
	if p == nil {
		return
	}
	KillGroup(p.cmd.Process.Pid)
	<-p.done
}

// Tail returns the last lines the process wrote, for error messages.
func (p *Process) Tail() string { return p.out.tail() }

// Sink serialises whole lines from several processes into one writer.
type Sink struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSink returns a Sink that writes to w.
func NewSink(w io.Writer) *Sink { return &Sink{w: w} }

// writeLine writes one line; errors are dropped because a failing log must
// not stop the servers.
func (s *Sink) writeLine(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(line)
}

// tailLines is how many lines of a process's output error messages quote.
const tailLines = 30

// lineWriter splits a process's output into lines, prefixes them for the
// shared log and keeps the last tailLines of them.
type lineWriter struct {
	sink    *Sink
	prefix  string
	mu      sync.Mutex // exec copies stdout and stderr in two goroutines
	partial []byte     // an unfinished last line
	last    []string   // ring of the last tailLines lines
	next    int        // where the ring writes next
}

// Write implements io.Writer.
func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.emit(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
}

// flush emits an unfinished last line.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emit(w.partial)
		w.partial = nil
	}
}

// emit writes one line to the sink and the ring; w.mu is held.
func (w *lineWriter) emit(line []byte) {
	w.sink.writeLine([]byte(w.prefix + string(line) + "\n"))
	if len(w.last) < tailLines {
		w.last = append(w.last, string(line))
		return
	}
	w.last[w.next] = string(line)
	w.next = (w.next + 1) % tailLines
}

// tail returns the kept lines, oldest first.
func (w *lineWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := append(append([]string{}, w.last[w.next:]...), w.last[:w.next]...)
	return strings.Join(lines, "\n")
}
