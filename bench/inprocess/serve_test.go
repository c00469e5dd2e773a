// Package inprocess benchmarks ServeDNS of kubeschema, the stock
// kubernetes plugin and whoami in one process, on the data of a real API
// server. The bench tool (bench/) loads the data and runs this benchmark
// with the environment below; alone it skips.
//
// Each plugin is set up the way CoreDNS sets it up: caddy.Start with a
// Corefile of three server blocks, one per plugin, with the options the
// servers under load get. A directive of this package, benchgrab, hands
// each block's plugin handler to the benchmark at start-up, and the
// benchmark calls that handler's ServeDNS directly, with a ResponseWriter
// that discards the reply: the plugin's work, without the network or the
// packing of the reply.
package inprocess

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/coredns/plugins"
)

// The environment the bench tool sets.
const (
	envKubeconfig = "SCHEMADNS_BENCH_KUBECONFIG"
	envCases      = "SCHEMADNS_BENCH_CASES" // lines kind|name|TYPE|expect|udp or tcp
	envMix        = "SCHEMADNS_BENCH_MIX"   // a dnsperf data file
)

// plugins benchmarked, in the order of the report.
var benched = []string{"kubeschema", "kubernetes", "whoami"}

// grabbed holds each benchmarked plugin's handler, filled in by benchgrab
// when the instance starts. It is the only way to reach a plugin of a
// running server; the benchmark process starts one instance, once.
var grabbed = struct {
	sync.Mutex
	h map[string]plugin.Handler
}{h: map[string]plugin.Handler{}}

func init() { plugin.Register("benchgrab", setupGrab) }

// setupGrab parses "benchgrab PLUGIN" and, at start-up, hands over the
// block's handler named PLUGIN.
func setupGrab(c *caddy.Controller) error {
	c.Next()
	if !c.NextArg() {
		return c.ArgErr()
	}
	name := c.Val()
	cfg := dnsserver.GetConfig(c)
	c.OnStartup(func() error {
		h := cfg.Handler(name)
		if h == nil {
			return fmt.Errorf("benchgrab: no plugin %q in this server block", name)
		}
		grabbed.Lock()
		grabbed.h[name] = h
		grabbed.Unlock()
		return nil
	})
	return nil
}

// benchCase is one query of the benchmark.
type benchCase struct {
	kind, expect string
	msg          *dns.Msg
	tcp          bool
}

var startOnce struct {
	sync.Once
	err error
}

// start starts the three server blocks once and waits until both
// Kubernetes plugins answer every case as expected.
func start(b *testing.B, kubeconfig string, cases []benchCase) map[string]plugin.Handler {
	startOnce.Do(func() {
		startOnce.err = startInstance(kubeconfig)
		if startOnce.err == nil {
			startOnce.err = waitSynced(cases, 5*time.Minute)
		}
	})
	if startOnce.err != nil {
		b.Fatal(startOnce.err)
	}
	grabbed.Lock()
	defer grabbed.Unlock()
	return grabbed.h
}

func startInstance(kubeconfig string) error {
	var blocks strings.Builder
	for _, p := range benched {
		port, err := freePort()
		if err != nil {
			return err
		}
		stanza := p
		if p != "whoami" {
			stanza = fmt.Sprintf("%s cluster.local in-addr.arpa ip6.arpa {\n  kubeconfig %s\n  pods verified\n  startup_timeout 5m\n }", p, kubeconfig)
		}
		fmt.Fprintf(&blocks, ".:%d {\n bind 127.0.0.1\n %s\n benchgrab %s\n}\n", port, stanza, p)
	}
	dnsserver.Directives = append(append([]string(nil), plugins.Directives...), "benchgrab")
	dnsserver.Quiet = true
	_, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(blocks.String()), Filepath: "Corefile", ServerTypeName: "dns"})
	if err != nil {
		return fmt.Errorf("start CoreDNS: %w", err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitSynced polls the Kubernetes plugins until each case is answered as
// expected: a positive answer, NODATA or NXDOMAIN.
func waitSynced(cases []benchCase, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := checkAll(cases)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not synced within %s: %w", within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func checkAll(cases []benchCase) error {
	grabbed.Lock()
	defer grabbed.Unlock()
	for _, name := range benched[:2] {
		h := grabbed.h[name]
		for _, c := range cases {
			rec := dnstest.NewRecorder(&test.ResponseWriter{TCP: c.tcp})
			h.ServeDNS(context.Background(), rec, c.msg)
			if got := outcome(rec.Msg); got != c.expect {
				return fmt.Errorf("%s: %s %s: %s, want %s", name, c.msg.Question[0].Name, dns.TypeToString[c.msg.Question[0].Qtype], got, c.expect)
			}
		}
	}
	return nil
}

// outcome classifies a reply as answer, nodata, nxdomain or its rcode.
func outcome(m *dns.Msg) string {
	switch {
	case m == nil:
		return "no reply"
	case m.Rcode == dns.RcodeNameError:
		return "nxdomain"
	case m.Rcode != dns.RcodeSuccess:
		return dns.RcodeToString[m.Rcode]
	case len(m.Answer) == 0:
		return "nodata"
	}
	return "answer"
}

// loadCases reads the cases and the mix named by the environment.
func loadCases(b *testing.B) (cases []benchCase, mix []*dns.Msg) {
	data, err := os.ReadFile(os.Getenv(envCases))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 5 {
			b.Fatalf("%s: bad line %q", envCases, line)
		}
		cases = append(cases, benchCase{kind: f[0], msg: question(f[1], f[2]), expect: f[3], tcp: f[4] == "tcp"})
	}
	file, err := os.Open(os.Getenv(envMix))
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			mix = append(mix, question(f[0], f[1]))
		}
	}
	return cases, mix
}

func question(name, qtype string) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.StringToType[qtype])
	return m
}

// BenchmarkServeDNS times each plugin's ServeDNS on each kind of query of
// the cluster mix, on the largest headless service over TCP, and on the
// whole mix in turn.
func BenchmarkServeDNS(b *testing.B) {
	kubeconfig := os.Getenv(envKubeconfig)
	if kubeconfig == "" {
		b.Skip("run by the bench tool (cd bench && go run .), which sets " + envKubeconfig)
	}
	cases, mix := loadCases(b)
	hs := start(b, kubeconfig, cases)
	ctx := context.Background()
	for _, name := range benched {
		h := hs[name]
		for _, c := range cases {
			b.Run(name+"/"+strings.ReplaceAll(c.kind, " ", "_"), func(b *testing.B) {
				w := &test.ResponseWriter{TCP: c.tcp}
				b.ReportAllocs()
				for b.Loop() {
					h.ServeDNS(ctx, w, c.msg)
				}
			})
		}
		b.Run(name+"/mix", func(b *testing.B) {
			w := &test.ResponseWriter{}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				h.ServeDNS(ctx, w, mix[i])
				if i++; i == len(mix) {
					i = 0
				}
			}
		})
	}
}
