// Package server runs the targets under test: each a bin/coredns process
// with a generated Corefile, pinned to the server CPU, and what the bench
// reads of one (its answers, memory, metrics and profiles).
package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/procstat"
)

// Server is a running bin/coredns serving one target.
type Server struct {
	Target
	Port, pprof int
	metrics     int
	started     time.Time
	SyncTime    time.Duration // start to every probe answered completely
	LogPath     string
	*procstat.Child
}

// Options are how the servers and the load generators run: the binary, and
// the CPUs each is pinned to (with taskset) unless Pin is false.
type Options struct {
	CoreDNS              string
	Pin                  bool
	ServerCPU, ClientCPU int
}

// Start runs the binary on free loopback ports, pinned to the
// server CPU; source is what the target's stanza reads.
func Start(o Options, work, source, shape string, t Target) (*Server, error) {
	ports, err := dnsload.FreePorts(4)
	if err != nil {
		return nil, err
	}
	s := &Server{Target: t, Port: ports[0], pprof: ports[2], metrics: ports[3]}
	base := filepath.Join(work, shape+"-"+t.Key)
	conf := base + ".Corefile"
	cf := corefile(t, source, s.Port, ports[1], s.pprof, s.metrics)
	if err := os.WriteFile(conf, []byte(cf), 0o644); err != nil {
		return nil, err
	}
	s.LogPath = base + ".log"
	s.started = time.Now()
	if s.Child, err = procstat.StartChild(o.Pinned(o.ServerCPU, o.CoreDNS, "-conf", conf), s.LogPath); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Key, err)
	}
	return s, nil
}

// Pinned is a command run on one CPU (with taskset, which execs it, so the
// PID is the command's own), or unpinned with -pin=false.
func (o Options) Pinned(cpu int, name string, args ...string) *exec.Cmd {
	if !o.Pin {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", strconv.Itoa(cpu), name}, args...)...)
}

// Unpin lets every thread of the server run on any CPU (GOMAXPROCS stays
// what it was at start).
func (s *Server) Unpin() error { return SetAffinity(s.PID(), AllCPUs()) }

// AllCPUs is every CPU, as taskset's list: "0-1".
func AllCPUs() string { return fmt.Sprintf("0-%d", runtime.NumCPU()-1) }

// SetAffinity puts every thread of the process pid on the CPUs of list
// (taskset's syntax); the threads it starts later inherit it.
func SetAffinity(pid int, list string) error {
	if out, err := exec.Command("taskset", "-a", "-p", "-c", list, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("taskset -a -p -c %s %d: %w: %s", list, pid, err, out)
	}
	return nil
}

// Addr is the server's DNS address, host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// String is the target's key.
func (s *Server) String() string { return s.Key }

// Sentinel is a query whose answer shows that a server has the whole
// fixture (a probe): the objects created last, the largest headless service
// whole.
type Sentinel struct {
	Name  string
	Qtype uint16
	TCP   bool
	Min   int // answer records at least
}

// WaitSynced polls the sentinels until each has its complete answer, every
// 10 ms, so that the time from the process's start to its first complete
// answer is read to about that.
func (s *Server) WaitSynced(ctx context.Context, sentinels []Sentinel, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	pending := sentinels
	var last string
	for len(pending) > 0 {
		if !s.Alive() {
			return fmt.Errorf("%s exited during start-up; see %s", s, s.LogPath)
		}
		var still []Sentinel
		for _, q := range pending {
			r, err := Exchange(s.Addr(), q.TCP, q.Name, q.Qtype)
			switch {
			case err != nil:
				last = err.Error()
				still = append(still, q)
			case r.Rcode != dns.RcodeSuccess || len(r.Answer) < q.Min:
				last = fmt.Sprintf("%s %s: %s with %d records, want %d", q.Name, dns.TypeToString[q.Qtype], dns.RcodeToString[r.Rcode], len(r.Answer), q.Min)
				still = append(still, q)
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not synced within %s (last: %s); see %s", s, within, last, s.LogPath)
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.SyncTime = time.Since(s.started)
	return nil
}

// Exchange sends one query and returns the reply.
func Exchange(addr string, tcp bool, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	if tcp {
		c.Net = "tcp"
	} else {
		m.SetEdns0(4096, false)
	}
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// Memory is a process's memory at one moment.
type Memory struct {
	RSS       int64 // bytes, VmRSS
	PeakRSS   int64 // bytes, VmHWM: the process's peak so far (since the last reset)
	HeapInuse int64 // bytes, the Go heap in use right after a forced GC
}

// ReadMemory forces a garbage collection and reads the Go heap in use in
// the same request (the pprof heap profile with gc=1 and debug=1 ends with
// the runtime.MemStats read right after that collection, "# HeapInuse = N"),
// then VmRSS and VmHWM from /proc, so that both plugins are read without
// their garbage.
func (s *Server) ReadMemory() (Memory, error) {
	var m Memory
	prof, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1&debug=1", s.pprof))
	if err != nil {
		return m, fmt.Errorf("heap of %s: %w", s, err)
	}
	if m.HeapInuse, err = memStat(prof, "HeapInuse"); err != nil {
		return m, fmt.Errorf("heap of %s: %w", s, err)
	}
	if m.RSS, m.PeakRSS, err = procstat.RSS(s.PID()); err != nil {
		return m, err
	}
	return m, nil
}

// memStat is a "# Name = N" line of a debug=1 heap profile.
func memStat(profile, name string) (int64, error) {
	for line := range strings.SplitSeq(profile, "\n") {
		if v, ok := strings.CutPrefix(line, "# "+name+" = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %q line in the heap profile", "# "+name)
}

// SkippedSlices is the server's
// coredns_watchcache_updates_skipped_total{resource="endpointslices"}:
// EndpointSlice updates that changed nothing DNS reads; -1 for a target
// that is not ours (the binary is the same, the cache is not used) or when
// it cannot be read.
func (s *Server) SkippedSlices() int {
	skipped, err := s.MetricByLabel("coredns_watchcache_updates_skipped_total", "resource")
	if err != nil {
		return -1
	}
	if n, ok := skipped["endpointslices"]; ok {
		return int(n)
	}
	if s.Key == KeyOurs {
		return 0 // nothing skipped yet: the vector has no child
	}
	return -1
}

// MetricByLabel is the samples of a metric family by the value of one of
// their labels; a family without labels is under "".
func (s *Server) MetricByLabel(name, label string) (map[string]float64, error) {
	text, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metrics))
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", s, err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %q: %w", s, line, err)
		}
		key := ""
		if _, rest, ok := strings.Cut(series, label+`="`); ok {
			key, _, _ = strings.Cut(rest, `"`)
		}
		out[key] = v
	}
	return out, nil
}

// httpGet is the body of url, an error unless 200 OK.
func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// PromValues reads a server's metrics: each series' value by its name
// and labels as the text format writes them.
func PromValues(s *Server) (map[string]float64, error) {
	text, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metrics))
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", s, err)
	}
	return parseProm(text), nil
}

// parseProm reads the Prometheus text format: "name{labels} value" lines.
func parseProm(text string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// StopAll stops the servers of the given targets, or all, and forgets
// them.
func StopAll(servers map[string]*Server, keys ...string) {
	for k, s := range servers {
		if len(keys) == 0 || slices.Contains(keys, k) {
			s.Stop()
			delete(servers, k)
		}
	}
}
