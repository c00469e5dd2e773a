package main

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
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/test/dnsload"
	"github.com/schemadns/schemadns/test/procstat"
)

// target is one server configuration under test.
type target struct {
	Key   string // its name in the tables: kubeschema, stock, floor, …
	Label string // what it is
	// stanza is the server block's plugins, given where they read their
	// data: a kubeconfig, a Mesos master's host:port, a zone file.
	stanza func(source string) string
	// kube is true for targets that serve the Kubernetes data (and are
	// waited for until synced); mc for those that serve clusterset.local.
	kube, mc bool
}

// The targets' keys.
const (
	keyOurs    = "kubeschema"
	keyStock   = "stock"
	keyFloor   = "floor"
	keyOursMC  = "kubeschema+multicluster"
	keyStockMC = "stock+multicluster"
)

// The targets: ours and stock with the same options, the framework's floor,
// and the same pair serving clusterset.local too.
var (
	targetOurs, targetStock = kubeTargets("verified")
	targetFloor             = target{Key: keyFloor, Label: "the framework's floor: a server block with only whoami",
		stanza: func(string) string { return "whoami" }}
	targetOursMC = target{Key: keyOursMC, Label: "kubeschema and multicluster in one server block (ours)", kube: true, mc: true,
		stanza: func(kc string) string {
			return kubeStanza("kubeschema", kubeZones, kc, "verified", "fallthrough in-addr.arpa ip6.arpa") + "\n    " +
				kubeStanza("multicluster", "clusterset.local in-addr.arpa ip6.arpa", kc, "", "")
		}}
	targetStockMC = target{Key: keyStockMC, Label: "CoreDNS's own kubernetes plugin with `multicluster clusterset.local`", kube: true, mc: true,
		stanza: func(kc string) string {
			return kubeStanza("kubernetes", "cluster.local clusterset.local in-addr.arpa ip6.arpa", kc, "verified", "multicluster clusterset.local")
		}}
)

// kubeZones are the zones ours and stock serve.
const kubeZones = "cluster.local in-addr.arpa ip6.arpa"

// kubeTargets are ours and stock with the given pods option: verified on
// every shape, and also disabled (no pod watch) on the threshold shape.
func kubeTargets(pods string) (ours, stock target) {
	ours = target{Key: keyOurs, Label: "kubeschema (ours)", kube: true,
		stanza: func(kc string) string { return kubeStanza("kubeschema", kubeZones, kc, pods, "") }}
	stock = target{Key: keyStock, Label: "CoreDNS's own kubernetes plugin, compiled into the same binary", kube: true,
		stanza: func(kc string) string { return kubeStanza("kubernetes", kubeZones, kc, pods, "") }}
	return ours, stock
}

// kubeStanza is a plugin stanza with the options both Kubernetes plugins
// get: a kubeconfig and the pods option (none for multicluster, which
// takes no pods option).
func kubeStanza(plugin, zones, kubeconfig, pods, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s {\n        kubeconfig %s\n", plugin, zones, kubeconfig)
	if pods != "" {
		fmt.Fprintf(&b, "        pods %s\n", pods)
	}
	if extra != "" {
		fmt.Fprintf(&b, "        %s\n", extra)
	}
	b.WriteString("    }")
	return b.String()
}

// corefile is a target's Corefile: the block under test alone on its port,
// and the pprof listener (heap figures, forced GC, profiles) and the
// metrics one in a block of their own, so that no plugin but the one
// measured is in the query path.
func corefile(t target, source string, port, admin, pprof, metrics int) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    %s
}
.:%d {
    bind 127.0.0.1
    pprof 127.0.0.1:%d
    prometheus 127.0.0.1:%d
}
`, port, t.stanza(source), admin, pprof, metrics)
}

// server is a running bin/coredns serving one target.
type server struct {
	target
	port, pprof int
	metrics     int
	started     time.Time
	syncTime    time.Duration // start to every probe answered completely
	logPath     string
	*procstat.Child
}

// startServer runs the binary on free loopback ports, pinned to the
// server CPU; source is what the target's stanza reads.
func startServer(cfg *config, work, source, shape string, t target) (*server, error) {
	ports, err := dnsload.FreePorts(4)
	if err != nil {
		return nil, err
	}
	s := &server{target: t, port: ports[0], pprof: ports[2], metrics: ports[3]}
	base := filepath.Join(work, shape+"-"+t.Key)
	conf := base + ".Corefile"
	cf := corefile(t, source, s.port, ports[1], s.pprof, s.metrics)
	if err := os.WriteFile(conf, []byte(cf), 0o644); err != nil {
		return nil, err
	}
	s.logPath = base + ".log"
	s.started = time.Now()
	if s.Child, err = procstat.StartChild(pinned(cfg, cfg.serverCPU, cfg.CoreDNS, "-conf", conf), s.logPath); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Key, err)
	}
	return s, nil
}

// pinned is a command run on one CPU (with taskset, which execs it, so the
// PID is the command's own), or unpinned with -pin=false.
func pinned(cfg *config, cpu int, name string, args ...string) *exec.Cmd {
	if !cfg.pin {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", strconv.Itoa(cpu), name}, args...)...)
}

// unpin lets every thread of the server run on any CPU (GOMAXPROCS stays
// what it was at start).
func (s *server) unpin() error { return setAffinity(s.pid(), allCPUs()) }

// allCPUs is every CPU, as taskset's list: "0-1".
func allCPUs() string { return fmt.Sprintf("0-%d", runtime.NumCPU()-1) }

// setAffinity puts every thread of the process pid on the CPUs of list
// (taskset's syntax); the threads it starts later inherit it.
func setAffinity(pid int, list string) error {
	if out, err := exec.Command("taskset", "-a", "-p", "-c", list, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("taskset -a -p -c %s %d: %w: %s", list, pid, err, out)
	}
	return nil
}

func (s *server) pid() int       { return s.PID() }
func (s *server) addr() string   { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }
func (s *server) alive() bool    { return s.Alive() }
func (s *server) String() string { return s.Key }

// stop ends the server: SIGTERM, then SIGKILL after 5 seconds.
func (s *server) stop() { s.Stop() }

// sentinel is a query whose answer shows that a server has the whole
// fixture (a probe): the objects created last, the largest headless service
// whole.
type sentinel struct {
	name  string
	qtype uint16
	tcp   bool
	min   int // answer records at least
}

// waitSynced polls the sentinels until each has its complete answer, every
// 10 ms, so that the time from the process's start to its first complete
// answer is read to about that.
func (s *server) waitSynced(ctx context.Context, sentinels []sentinel, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	pending := sentinels
	var last string
	for len(pending) > 0 {
		if !s.alive() {
			return fmt.Errorf("%s exited during start-up; see %s", s, s.logPath)
		}
		var still []sentinel
		for _, q := range pending {
			r, err := exchange(s.addr(), q.tcp, q.name, q.qtype)
			switch {
			case err != nil:
				last = err.Error()
				still = append(still, q)
			case r.Rcode != dns.RcodeSuccess || len(r.Answer) < q.min:
				last = fmt.Sprintf("%s %s: %s with %d records, want %d", q.name, dns.TypeToString[q.qtype], dns.RcodeToString[r.Rcode], len(r.Answer), q.min)
				still = append(still, q)
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not synced within %s (last: %s); see %s", s, within, last, s.logPath)
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.syncTime = time.Since(s.started)
	return nil
}

// exchange sends one query and returns the reply.
func exchange(addr string, tcp bool, name string, qtype uint16) (*dns.Msg, error) {
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

// memory is a process's memory at one moment.
type memory struct {
	RSS       int64 // bytes, VmRSS
	PeakRSS   int64 // bytes, VmHWM: the process's peak so far (since the last reset)
	HeapInuse int64 // bytes, the Go heap in use right after a forced GC
}

// readMemory forces a garbage collection and reads the Go heap in use in
// the same request (the pprof heap profile with gc=1 and debug=1 ends with
// the runtime.MemStats read right after that collection, "# HeapInuse = N"),
// then VmRSS and VmHWM from /proc, so that both plugins are read without
// their garbage.
func (s *server) readMemory() (memory, error) {
	var m memory
	prof, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1&debug=1", s.pprof))
	if err != nil {
		return m, fmt.Errorf("heap of %s: %w", s, err)
	}
	if m.HeapInuse, err = memStat(prof, "HeapInuse"); err != nil {
		return m, fmt.Errorf("heap of %s: %w", s, err)
	}
	if m.RSS, m.PeakRSS, err = procstat.RSS(s.pid()); err != nil {
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

// skippedSlices is the server's
// coredns_watchcache_updates_skipped_total{resource="endpointslices"}:
// EndpointSlice updates that changed nothing DNS reads; -1 for a target
// that is not ours (the binary is the same, the cache is not used) or when
// it cannot be read.
func (s *server) skippedSlices() int {
	skipped, err := s.metricByLabel("coredns_watchcache_updates_skipped_total", "resource")
	if err != nil {
		return -1
	}
	if n, ok := skipped["endpointslices"]; ok {
		return int(n)
	}
	if s.Key == keyOurs {
		return 0 // nothing skipped yet: the vector has no child
	}
	return -1
}

// metricByLabel is the samples of a metric family by the value of one of
// their labels; a family without labels is under "".
func (s *server) metricByLabel(name, label string) (map[string]float64, error) {
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
