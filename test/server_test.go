package test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/coredns/plugins"
)

// caddyMu serialises server starts: caddy keeps process-wide state while
// it loads a Corefile.
var caddyMu sync.Mutex

// server is one running CoreDNS instance.
type server struct {
	inst *caddy.Instance
	// UDP and TCP are the host:port of the first server block; with port 0
	// in the Corefile they differ.
	UDP, TCP string
}

// addr is the server's address for network "udp" or "tcp".
func (s *server) addr(network string) string {
	if network == "tcp" {
		return s.TCP
	}
	return s.UDP
}

// startServer starts CoreDNS with corefile (use port 0 for a free port)
// and stops it when the test ends.
func startServer(t testing.TB, corefile string) *server {
	t.Helper()
	if stockKubernetes.MatchString(corefile) {
		tt, ok := t.(*testing.T)
		if !ok {
			t.Fatal("the stock kubernetes plugin runs in a process of its own, from a test only")
		}
		return startProcess(tt, corefile)
	}
	caddyMu.Lock()
	defer caddyMu.Unlock()
	dnsserver.Directives = plugins.Directives
	dnsserver.Quiet = true
	inst, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(corefile), Filepath: "Corefile", ServerTypeName: "dns"})
	if err != nil {
		t.Fatalf("start CoreDNS: %v", err)
	}
	s := &server{inst: inst}
	if srvs := inst.Servers(); len(srvs) > 0 {
		if u := srvs[0].LocalAddr(); u != nil {
			s.UDP = u.String()
		}
		if a := srvs[0].Addr(); a != nil {
			s.TCP = a.String()
		}
	}
	t.Cleanup(func() { inst.Stop(); inst.ShutdownCallbacks() })
	return s
}

// startError starts CoreDNS from a Corefile that must not start, and
// returns why it did not.
func startError(t testing.TB, corefile string) error {
	t.Helper()
	caddyMu.Lock()
	defer caddyMu.Unlock()
	dnsserver.Directives = plugins.Directives
	dnsserver.Quiet = true
	inst, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(corefile), Filepath: "Corefile", ServerTypeName: "dns"})
	if err == nil {
		inst.Stop()
		inst.ShutdownCallbacks()
		t.Fatalf("CoreDNS started from a Corefile that must not start:\n%s", corefile)
	}
	return err
}

// stockKubernetes finds the stock kubernetes plugin in a Corefile.
var stockKubernetes = regexp.MustCompile(`(?m)^\s*kubernetes(\s|$)`)

// startProcess runs corefile in the built binary, on a free loopback port
// (for port 0), and stops it when the test ends. The stock kubernetes
// plugin runs this way: its setup sets klog's logger, a global that the
// informers of the servers already running in this process read.
func startProcess(t *testing.T, corefile string) *server {
	t.Helper()
	port := freeLoopbackPort(t)
	corefile = strings.Replace(corefile, ".:0 {", fmt.Sprintf(".:%d {", port), 1)
	p := &coreDNSProcess{dnsAddr: fmt.Sprintf("127.0.0.1:%d", port)}
	runCorefile(t, coreDNSBinary(t), corefile, p)
	eventually(t, settleTimeout, "the stock server answers", func() bool {
		m := new(dns.Msg)
		m.SetQuestion("dns-version.cluster.local.", dns.TypeTXT)
		_, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, p.dnsAddr)
		return err == nil
	})
	return &server{UDP: p.dnsAddr, TCP: p.dnsAddr}
}

// exchange sends one query over network ("udp" or "tcp") and returns the
// reply.
func (s *server) exchange(t testing.TB, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, s.addr(network))
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return r
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s", what, within)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rrStrings renders a section one record a line, for readable failures.
func rrStrings(rrs []dns.RR) string {
	var b strings.Builder
	for _, rr := range rrs {
		b.WriteString(rr.String())
		b.WriteByte('\n')
	}
	return b.String()
}
