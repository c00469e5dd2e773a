package main

import (
	"bufio"
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

	"github.com/schemadns/schemadns/test/dnsload"
	"github.com/schemadns/schemadns/test/procstat"
)

// server is one running bin/coredns: ours (kubeschema, multicluster and
// edns0autopath) or stock (CoreDNS's own kubernetes plugin).
type server struct {
	key     string // "ours" or "stock"
	port    int    // the cluster.local (and clusterset.local) block
	apPort  int    // ours only: the edns0autopath block
	ready   int    // the ready plugin's HTTP port
	metrics int    // the prometheus plugin's HTTP port
	pprof   int    // the pprof plugin's HTTP port (goroutines of a stuck server)
	logPath string
	*procstat.Child
}

// The two servers' keys, as the report names them.
const (
	keyOurs  = "ours"
	keyStock = "stock"
)

// oursCorefile runs the three plugins in one process: kubeschema and
// multicluster answer cluster.local and clusterset.local on one port, with
// ready and prometheus in that block so that readiness covers both;
// edns0autopath has its own block, in front of a kubeschema of its own (the
// watch cache is shared by every instance, so this costs no second
// connection).
func oursCorefile(kc string, s *server) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    ready 127.0.0.1:%d
    prometheus 127.0.0.1:%d
    pprof 127.0.0.1:%d
    kubeschema cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        fallthrough in-addr.arpa ip6.arpa
    }
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %s
    }
}
.:%d {
    bind 127.0.0.1
    edns0autopath
    kubeschema cluster.local {
        kubeconfig %s
    }
}
`, s.port, s.ready, s.metrics, s.pprof, kc, kc, s.apPort, kc)
}

// stockCorefile is the comparison: the stock plugin with the same zones,
// multicluster included (its own option for clusterset.local).
func stockCorefile(kc string, s *server) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    ready 127.0.0.1:%d
    prometheus 127.0.0.1:%d
    pprof 127.0.0.1:%d
    kubernetes cluster.local clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        multicluster clusterset.local
    }
}
`, s.port, s.ready, s.metrics, s.pprof, kc)
}

// mesosCorefile runs mesosschema for the zone mesos with stanza's way to
// the masters (masters or zk), polled every refresh.
func mesosCorefile(s *server, stanza string, refresh, stateTimeout time.Duration) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    ready 127.0.0.1:%d
    prometheus 127.0.0.1:%d
    pprof 127.0.0.1:%d
    mesosschema mesos {
        %s
        refresh %s
        state_timeout %s
    }
}
`, s.port, s.ready, s.metrics, s.pprof, stanza, refresh, stateTimeout)
}

// startServer writes the server's Corefile, as corefile makes it for the
// server's ports, into work and starts it.
func startServer(cfg *config, work, key string, corefile func(*server) string) (*server, error) {
	ports, err := dnsload.FreePorts(5)
	if err != nil {
		return nil, err
	}
	s := &server{key: key, port: ports[0], apPort: ports[1], ready: ports[2], metrics: ports[3], pprof: ports[4]}
	cf := corefile(s)
	conf := filepath.Join(work, key+".Corefile")
	if err := os.WriteFile(conf, []byte(cf), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", conf, err)
	}
	s.logPath = filepath.Join(work, key+".log")
	if s.Child, err = procstat.StartChild(exec.Command(cfg.CoreDNS, "-conf", conf), s.logPath); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return s, nil
}

func (s *server) pid() int       { return s.PID() }
func (s *server) addr() string   { return hostPort(s.port) }
func (s *server) apAddr() string { return hostPort(s.apPort) }
func (s *server) String() string { return s.key }

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func (s *server) alive() bool { return s.Alive() }

// stop ends the server: SIGTERM, then SIGKILL after 5 seconds.
func (s *server) stop() { s.Stop() }

// waitAnswer polls until check accepts the server's answer to q (every
// 20 ms), the server exits or within passes.
func (s *server) waitAnswer(ctx context.Context, within time.Duration, q *dns.Msg, check func(*dns.Msg) bool) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	for {
		if !s.alive() {
			return fmt.Errorf("%s exited; see %s", s, s.logPath)
		}
		q.Id = dns.Id()
		if r, _, err := c.ExchangeContext(ctx, q, s.addr()); err == nil && check(r) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no right answer to %s within %s; see %s", s, q.Question[0].Name, within, s.logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isReady asks the ready plugin; any answer but 200 is not ready.
func (s *server) isReady() bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/ready", s.ready))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// metric returns the samples of a metric family whose lines contain every
// one of labels, from the prometheus plugin; none when the family is
// absent.
func (s *server) metric(name string, labels ...string) ([]float64, error) {
	var out []float64
	err := s.samples(name, func(line string, v float64) {
		if containsAll(line, labels) {
			out = append(out, v)
		}
	})
	return out, err
}

// metricByLabel returns the samples of a metric family by the value of
// one of their labels.
func (s *server) metricByLabel(name, label string) (map[string]float64, error) {
	out := map[string]float64{}
	err := s.samples(name, func(line string, v float64) {
		if _, rest, ok := strings.Cut(line, label+`="`); ok {
			value, _, _ := strings.Cut(rest, `"`)
			out[value] = v
		}
	})
	return out, err
}

// samples calls fn with each sample line of the metric family name, and
// its value.
func (s *server) samples(name string, fn func(line string, v float64)) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metrics))
	if err != nil {
		return fmt.Errorf("metrics of %s: %w", s, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return fmt.Errorf("metrics of %s: %q: %w", s, line, err)
		}
		fn(line, v)
	}
	return sc.Err()
}

func containsAll(line string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(line, p) {
			return false
		}
	}
	return true
}

// panics counts the panics the server logged (CoreDNS recovers a panic in
// a handler, answers SERVFAIL and logs it; the process survives).
func (s *server) panics() int {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "panic")
}

// rss is VmRSS and VmHWM of the server, in bytes.
func (s *server) rss() (cur, peak int64, err error) { return procstat.RSS(s.pid()) }

// resetPeak sets the server's VmHWM back to its current RSS, so that
// VmHWM read later is the peak since now.
func (s *server) resetPeak() error { return procstat.ResetPeak(s.pid()) }
