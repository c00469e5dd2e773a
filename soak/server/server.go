// Package server runs the bin/coredns processes the soak puts under test
// and reads them from outside, as a cluster would: their answers (the
// liveness probes, the SOA serial), their ready and prometheus endpoints,
// their RSS and the panics they logged. The Kubernetes and the Mesos
// scenarios each write their own Corefiles; this package knows no plugin.
package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/procstat"
)

// Server is one running bin/coredns: for the Kubernetes scenarios ours
// (kubeschema, multicluster and edns0autopath) or stock (CoreDNS's own
// kubernetes plugin), for a Mesos scenario mesosschema.
type Server struct {
	Key         string // "ours", "stock" or the Mesos scenario's name
	Port        int    // the main block (cluster.local and clusterset.local, or the Mesos zone)
	APPort      int    // ours only: the edns0autopath block
	ReadyPort   int    // the ready plugin's HTTP port
	MetricsPort int    // the prometheus plugin's HTTP port
	PprofPort   int    // the pprof plugin's HTTP port (goroutines of a stuck server)
	LogPath     string
	*procstat.Child
}

// Start writes the server's Corefile, as corefile makes it for the
// server's ports, into work and starts the binary coredns with it.
func Start(coredns, work, key string, corefile func(*Server) string) (*Server, error) {
	ports, err := dnsload.FreePorts(5)
	if err != nil {
		return nil, err
	}
	s := &Server{Key: key, Port: ports[0], APPort: ports[1], ReadyPort: ports[2], MetricsPort: ports[3], PprofPort: ports[4]}
	cf := corefile(s)
	conf := filepath.Join(work, key+".Corefile")
	if err := os.WriteFile(conf, []byte(cf), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", conf, err)
	}
	s.LogPath = filepath.Join(work, key+".log")
	if s.Child, err = procstat.StartChild(exec.Command(coredns, "-conf", conf), s.LogPath); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return s, nil
}

// Addr is the main block's address.
func (s *Server) Addr() string { return hostPort(s.Port) }

// APAddr is the edns0autopath block's address (ours only).
func (s *Server) APAddr() string { return hostPort(s.APPort) }

func (s *Server) String() string { return s.Key }

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// WaitAnswer polls until check accepts the server's answer to q (every
// 20 ms), the server exits or within passes.
func (s *Server) WaitAnswer(ctx context.Context, within time.Duration, q *dns.Msg, check func(*dns.Msg) bool) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	for {
		if !s.Alive() {
			return fmt.Errorf("%s exited; see %s", s, s.LogPath)
		}
		q.Id = dns.Id()
		if r, _, err := c.ExchangeContext(ctx, q, s.Addr()); err == nil && check(r) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no right answer to %s within %s; see %s", s, q.Question[0].Name, within, s.LogPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// IsReady asks the ready plugin; any answer but 200 is not ready.
func (s *Server) IsReady() bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/ready", s.ReadyPort))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Panics counts the panics the server logged (CoreDNS recovers a panic in
// a handler, answers SERVFAIL and logs it; the process survives).
func (s *Server) Panics() int {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "panic")
}

// RSS is VmRSS and VmHWM of the server, in bytes.
func (s *Server) RSS() (cur, peak int64, err error) { return procstat.RSS(s.PID()) }

// ResetPeak sets the server's VmHWM back to its current RSS, so that
// VmHWM read later is the peak since now.
func (s *Server) ResetPeak() error { return procstat.ResetPeak(s.PID()) }
