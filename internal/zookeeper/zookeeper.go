// Package zookeeper runs a real ZooKeeper server on loopback for tests of
// Mesos leader detection, and registers stand-in masters in it the way Mesos
// does: each with its own session, as an ephemeral sequential znode
// "json.info_<seq>" holding its MasterInfo in JSON.
//
// It runs Debian's ZooKeeper (package zookeeper, with a JRE; hack/deps.sh
// installs both) from its jar, not its service, on a free port with its data
// in a work directory of its own:
//
//	zk := zookeeper.StartTest(t) // stopped when the test ends
//	m, err := zk.RegisterMaster("/mesos", zookeeper.MasterInfo{IP: "10.0.0.1", Port: 5050})
//	...
//	err = m.Remove() // the master leaves the election
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/schemadns/schemadns/internal/childproc"
)

const (
	// DefaultClassPath is Debian's layout. slf4j-simple comes first so that
	// it is the logging binding picked among the several in
	// /usr/share/java (some of which cannot coexist): the server's own log
	// is then in the work dir's log for error messages.
	DefaultClassPath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/*"
	mainClass        = "org.apache.zookeeper.server.ZooKeeperServerMain"
	// defaultReadyTimeout is generous for a JVM start on a loaded 2-core
	// machine; it takes about 2 seconds on an idle one.
	defaultReadyTimeout = 60 * time.Second
	// sessionTimeout is the stand-in masters' sessions' (and the readiness
	// probe's). Long, within the server's limit of 20 ticks, so that their
	// znodes outlive a Kill and Restart: a restart on a loaded machine has
	// taken 20 seconds, while the sessions' clocks run.
	sessionTimeout = 30 * time.Second
	installHint    = "run hack/deps.sh (as root) to install the zookeeper and default-jre-headless packages"
)

// Options configure Start. The zero value is ready to use.
type Options struct {
	// WorkDir holds zoo.cfg, the data and the default log. Default: a fresh
	// temporary directory, removed by Stop. A WorkDir given here is kept.
	WorkDir string
	// Log receives the server's output. Default: the file zookeeper.log in
	// WorkDir.
	Log io.Writer
	// ReadyTimeout bounds each wait for a client session. Default 60s.
	ReadyTimeout time.Duration
	// Java is the java binary; default "java" on PATH.
	Java string
	// ClassPath is the JVM class path; default DefaultClassPath.
	ClassPath string
}

// Server is a running ZooKeeper.
type Server struct {
	// WorkDir is where the server keeps its files.
	WorkDir string
	// LogPath is the log file when Options.Log was not given, else "".
	LogPath string

	opts       Options
	addr       string
	args       []string // the java command line, kept for Restart
	ownWorkDir bool     // Stop removes WorkDir only if Start made it
	logFile    *os.File
	log        *childproc.Sink

	mu      sync.Mutex // guards what follows against concurrent Stop/Restart
	proc    *childproc.Process
	masters []*Master // closed by Stop
	stopped bool
}

// errStopped is returned by methods called after Stop.
var errStopped = errors.New("zookeeper: server stopped")

// Start starts ZooKeeper and returns once a client session connects. On
// error nothing is left running.
func Start(ctx context.Context, opts Options) (*Server, error) {
	s, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	if err := s.Restart(ctx); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// StartTest starts ZooKeeper for tb and stops it when tb ends, keeping the
// work directory (and printing its path) when tb failed. Missing java or
// ZooKeeper fail tb: CI installs them with hack/deps.sh, so a skip would hide
// a broken setup.
func StartTest(tb testing.TB) *Server {
	tb.Helper()
	begin := time.Now()
	s, err := Start(context.Background(), Options{})
	if err != nil {
		tb.Fatalf("start ZooKeeper: %v", err)
	}
	tb.Logf("ZooKeeper ready at %s in %s", s.Addr(), time.Since(begin).Round(time.Millisecond))
	tb.Cleanup(func() {
		if tb.Failed() && s.ownWorkDir {
			s.ownWorkDir = false
			tb.Logf("ZooKeeper work dir kept: %s (log: %s)", s.WorkDir, s.LogPath)
		}
		if err := s.Stop(); err != nil {
			tb.Errorf("stop ZooKeeper: %v", err)
		}
	})
	return s
}

// prepare checks for java and the jar, makes the work dir and writes
// zoo.cfg; it starts nothing.
func prepare(opts Options) (*Server, error) {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = defaultReadyTimeout
	}
	if opts.ClassPath == "" {
		opts.ClassPath = DefaultClassPath
		if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
			return nil, fmt.Errorf("zookeeper: no ZooKeeper jar (%w); %s", err, installHint)
		}
	}
	java, err := exec.LookPath(cmpOr(opts.Java, "java"))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w; %s", err, installHint)
	}
	s := &Server{opts: opts, WorkDir: opts.WorkDir}
	if err := s.makeWorkDir(); err != nil {
		return nil, err
	}
	if err := s.openLog(); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	cfg, err := s.writeConfig()
	if err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	s.args = []string{java,
		// A small heap and the quick JIT: a test server holds a few znodes
		// and should start fast.
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		// Without it ZooKeeper registers log4j's JMX beans and log4j
		// warns that it has no appenders.
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", opts.ClassPath, mainClass, cfg}
	return s, nil
}

// cmpOr returns a, or b when a is empty.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// makeWorkDir creates WorkDir, a temporary one unless given.
func (s *Server) makeWorkDir() error {
	if s.WorkDir != "" {
		if err := os.MkdirAll(s.WorkDir, 0o700); err != nil {
			return fmt.Errorf("zookeeper: work dir: %w", err)
		}
		return nil
	}
	dir, err := os.MkdirTemp("", "zookeeper-")
	if err != nil {
		return fmt.Errorf("zookeeper: work dir: %w", err)
	}
	s.WorkDir, s.ownWorkDir = dir, true
	return nil
}

// openLog opens the default log file unless the caller gave a writer.
func (s *Server) openLog() error {
	w := s.opts.Log
	if w == nil {
		s.LogPath = filepath.Join(s.WorkDir, "zookeeper.log")
		f, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("zookeeper: open log: %w", err)
		}
		s.logFile, w = f, f
	}
	s.log = childproc.NewSink(w)
	return nil
}

// writeConfig picks the port and writes zoo.cfg, returning its path.
func (s *Server) writeConfig() (string, error) {
	port, err := childproc.FreePort()
	if err != nil {
		return "", fmt.Errorf("zookeeper: %w", err)
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cfg := strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + filepath.Join(s.WorkDir, "data"),
		"clientPort=" + strconv.Itoa(port),
		"clientPortAddress=127.0.0.1",
		// The AdminServer would take port 8080; the tests do not use it.
		"admin.enableServer=false",
		// srvr is the readiness probe (waitReady).
		"4lw.commands.whitelist=srvr,ruok,stat",
		// Test data need not survive a power cut (zookeeper.forceSync).
		"forceSync=no",
		"",
	}, "\n")
	path := filepath.Join(s.WorkDir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("zookeeper: %w", err)
	}
	return path, nil
}

// Addr is the client address, 127.0.0.1:port.
func (s *Server) Addr() string { return s.addr }

// URL is the zk:// URL of path on this server, as Mesos's --zk takes it.
func (s *Server) URL(path string) string { return "zk://" + s.addr + path }

// Kill kills the server abruptly, like a crash, and returns once it is
// gone; its data stays for Restart. Sessions live on in the data until they
// time out after a Restart.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errStopped
	}
	s.proc.Kill()
	return nil
}

// Restart starts the server again after Kill, on the same port with the
// same data, and returns once a client session connects. It does nothing
// while the server runs.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errStopped
	}
	if s.proc != nil && s.proc.Exited() == nil {
		return nil
	}
	p, err := childproc.Start("zookeeper", s.args[0], s.args[1:], s.log)
	if err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	s.proc = p
	return s.waitReady(ctx)
}

// waitReady waits until the server says it serves, then until a client
// session is established. The port opens before the server runs: a session
// tried then fails, and ZooKeeper 3.8.0 leaves that connection open, so the
// client waits out its handshake timeout (about 27 seconds) before retrying.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ReadyTimeout)
	defer cancel()
	last := "no answer yet"
	for {
		if err := s.proc.Exited(); err != nil {
			return s.startError(err)
		}
		answer, err := s.srvr(ctx)
		if err == nil && strings.HasPrefix(answer, "Zookeeper version:") {
			break
		}
		if last = answer; err != nil {
			last = err.Error()
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return s.startError(fmt.Errorf("not serving (last srvr: %s): %w", strings.TrimSpace(last), err))
		}
	}
	conn, err := s.connect(ctx)
	if err != nil {
		return s.startError(err)
	}
	conn.Close()
	return nil
}

// srvr returns the answer to the four-letter command srvr: the version and
// counters when the server serves, a refusal before.
func (s *Server) srvr(ctx context.Context) (string, error) {
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// startError adds the server's last log lines to err.
func (s *Server) startError(err error) error {
	return fmt.Errorf("zookeeper at %s: %w; last lines of its log:\n%s", s.addr, err, s.proc.Tail())
}

// connect opens a client session and waits until it is established.
func (s *Server) connect(ctx context.Context) (*zk.Conn, error) {
	conn, events, err := zk.Connect([]string{s.addr}, sessionTimeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn, nil
			}
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("no client session: %w", ctx.Err())
		}
	}
}

// quiet drops the client library's messages: one per reconnection attempt
// while a test has killed the server.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop closes the registered masters' sessions, kills the server and
// removes WorkDir if Start created it. It is safe to call more than once.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	for _, m := range s.masters {
		m.conn.Close()
	}
	s.proc.Kill()
	var errs []error
	if s.logFile != nil {
		errs = append(errs, s.logFile.Close())
	}
	if s.ownWorkDir {
		errs = append(errs, os.RemoveAll(s.WorkDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("zookeeper: stop: %w", err)
	}
	return nil
}
