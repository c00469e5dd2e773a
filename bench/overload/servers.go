package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/procstat"
)

// A configuration under test: ours as deploy/base ships it, ours without
// its admission (the clusterfirst lines taken out), and stock CoreDNS with
// kubeadm's Corefile, alone and with shed.
type serverConfig struct {
	Key, Label string
	// corefile is the Corefile for the ports, the kubeconfig and the
	// upstream.
	corefile func(p ports, kubeconfig, upstream string) (string, error)
}

// ports are a server's listeners, all on 127.0.0.1.
type ports struct{ dns, health, ready, metrics int }

const (
	keyOurs      = "ours"
	keyOursPlain = "ours-plain"
	keyStock     = "stock"
	keyStockShed = "stock-shed"
)

func serverConfigs(root string) map[string]serverConfig {
	base := filepath.Join(root, "deploy", "base", "Corefile")
	return map[string]serverConfig{
		keyOurs: {Key: keyOurs, Label: "ours: deploy/base's Corefile",
			corefile: func(p ports, kc, up string) (string, error) { return deployCorefile(base, p, kc, up, true) }},
		keyOursPlain: {Key: keyOursPlain, Label: "ours: deploy/base's Corefile without clusterfirst",
			corefile: func(p ports, kc, up string) (string, error) { return deployCorefile(base, p, kc, up, false) }},
		keyStock: {Key: keyStock, Label: "stock CoreDNS with kubeadm's Corefile",
			corefile: func(p ports, kc, up string) (string, error) { return kubeadmCorefile(p, kc, up, false), nil }},
		keyStockShed: {Key: keyStockShed, Label: "stock CoreDNS with kubeadm's Corefile and shed",
			corefile: func(p ports, kc, up string) (string, error) { return kubeadmCorefile(p, kc, up, true), nil }},
	}
}

// deployCorefile is deploy/base's Corefile on the ports, with the lines of
// its imports written in (pods insecure, the kubeconfig) and forwarding to
// the upstream; with admission false, without clusterfirst.
func deployCorefile(path string, p ports, kubeconfig, upstream string, admission bool) (string, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	edits := []struct{ re, to string }{
		{`(?m)^\.:53 \{`, fmt.Sprintf(".:%d {\n    bind 127.0.0.1", p.dns)},
		{`(?m)^(\s*)health\b`, fmt.Sprintf("${1}health 127.0.0.1:%d", p.health)},
		{`(?m)^(\s*)ready$`, fmt.Sprintf("${1}ready 127.0.0.1:%d", p.ready)},
		{`(?m)^(\s*)prometheus :9153$`, fmt.Sprintf("${1}prometheus 127.0.0.1:%d", p.metrics)},
		{`(?m)^(\s*)import \*\.kubeschema$`, "${1}kubeconfig " + kubeconfig + "\n${1}pods insecure"},
		{`(?m)^\s*import \*\.server\n`, ""},
		{`forward \. /etc/resolv\.conf`, "forward . " + upstream},
	}
	out := string(text)
	for _, e := range edits {
		re := regexp.MustCompile(e.re)
		if !re.MatchString(out) {
			return "", fmt.Errorf("%s: no line matches %s: the bench's edits need updating", path, e.re)
		}
		out = re.ReplaceAllString(out, e.to)
	}
	if !admission {
		out = dropBlock(out, "clusterfirst")
	}
	return out, nil
}

// dropBlock removes the directive's line, or its block when it has one.
func dropBlock(corefile, directive string) string {
	var out []string
	depth := 0
	for _, line := range strings.Split(corefile, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case depth > 0:
			depth += strings.Count(t, "{") - strings.Count(t, "}")
			continue
		case t == directive || strings.HasPrefix(t, directive+" "):
			depth = strings.Count(t, "{") - strings.Count(t, "}")
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// kubeadmCorefile is the Corefile kubeadm installs (kubeadm's CoreDNS
// addon, as test/e2e/manifests/stock-coredns.yaml has it), on the ports;
// with shed, the plugin stock's docs offer against overload.
func kubeadmCorefile(p ports, kubeconfig, upstream string, shed bool) string {
	shedLine := ""
	if shed {
		shedLine = "\n    shed"
	}
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1%s
    errors
    health 127.0.0.1:%d {
       lameduck 5s
    }
    ready 127.0.0.1:%d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       kubeconfig %s
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus 127.0.0.1:%d
    forward . %s {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`, p.dns, shedLine, p.health, p.ready, kubeconfig, p.metrics, upstream)
}

// server is a running bin/coredns.
type server struct {
	serverConfig
	ports
	logPath string
	*procstat.Child
}

func (s *server) pid() int           { return s.PID() }
func (s *server) addr() string       { return "127.0.0.1:" + strconv.Itoa(s.dns) }
func (s *server) healthURL() string  { return fmt.Sprintf("http://127.0.0.1:%d/health", s.health) }
func (s *server) readyURL() string   { return fmt.Sprintf("http://127.0.0.1:%d/ready", s.ready) }
func (s *server) metricsURL() string { return fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metrics) }

// startServer runs the configuration on free ports, pinned to cpus (a
// taskset list) with GOMAXPROCS procs (0: the runtime's choice, which is
// the CPUs of the affinity).
func startServer(cfg *config, sc serverConfig, tag, upstream string, procs int, cpus string) (*server, error) {
	free, err := dnsload.FreePorts(4)
	if err != nil {
		return nil, err
	}
	p := ports{dns: free[0], health: free[1], ready: free[2], metrics: free[3]}
	text, err := sc.corefile(p, cfg.kubeconfig, upstream)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, tag)
	if err := os.WriteFile(base+".Corefile", []byte(text), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("taskset", "-c", cpus, cfg.CoreDNS, "-conf", base+".Corefile")
	cmd.Env = os.Environ()
	if procs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	s := &server{serverConfig: sc, ports: p, logPath: base + ".log"}
	if s.Child, err = procstat.StartChild(cmd, s.logPath); err != nil {
		return nil, fmt.Errorf("%s: %w", sc.Key, err)
	}
	return s, nil
}

// waitServing waits until the server answers the cluster name.
func (s *server) waitServing(ctx context.Context, name string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	for {
		if !s.Alive() {
			return fmt.Errorf("%s exited at start; see %s", s.Key, s.logPath)
		}
		if r, _, err := c.Exchange(q, s.addr()); err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not answered within %s; see %s", s.Key, name, within, s.logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
