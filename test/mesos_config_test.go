package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/mesosmaster"
)

// Whole-server tests of mesosschema's `config FILE`: a Mesos-DNS
// config.json, pointed at the stand-in master, starts the plugin with
// warnings only and answers, over DNS and its HTTP interface.

const mesosConfigDir = "../plugin/mesosschema/testdata/"

// mesosConfigFile rewrites the fixture name with the fields given (the
// stand-in master's address, free ports) and writes it for the test.
func mesosConfigFile(t *testing.T, name string, set map[string]any, drop ...string) string {
	t.Helper()
	raw, err := os.ReadFile(mesosConfigDir + name)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		fields[k] = v
	}
	for _, k := range drop {
		delete(fields, k)
	}
	body, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// configCorefile serves the file's mesosschema on a free loopback port;
// zk_timeout 1s beside it (a stanza option wins over the file) keeps the
// first poll from waiting 30 s on the ZooKeeper nobody runs here.
func configCorefile(path string) string {
	return ".:0 {\n    bind 127.0.0.1\n    mesosschema {\n        config " + path + "\n        zk_timeout 1s\n    }\n}\n"
}

// configWarnings are the log's lines about the config file.
func configWarnings(logs *logCapture, path string) []string {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	var out []string
	for line := range strings.SplitSeq(logs.buf.String(), "\n") {
		if strings.Contains(line, "config "+path+": ") {
			out = append(out, line)
		}
	}
	return out
}

// TestMesosConfigSample: the fields of Mesos-DNS's config.json.sample, the
// masters pointed at the stand-in master, start the plugin with a warning
// per field the Corefile decides, nothing worse, and it answers with the
// file's TTL and SOA, and serves the HTTP interface on the file's port.
func TestMesosConfigSample(t *testing.T) {
	logs := captureLog(t)
	master := startMesosMaster(t, exampleMesosState(t))
	httpPort := freeLoopbackPort(t)
	path := mesosConfigFile(t, "mesos-dns-config.sample.json", map[string]any{
		"masters":  []string{master.Addr()},
		"zk":       fmt.Sprintf("zk://127.0.0.1:%d/mesos", freeLoopbackPort(t)), // nothing listens there
		"httpport": httpPort,
	})
	s := startServer(t, configCorefile(path))
	line := func(owner, rrtype, rdata string) string { return owner + " 60 IN " + rrtype + " " + rdata }
	for _, network := range []string{"udp", "tcp"} {
		checkAll(t, s, network, []dnsCase{
			{"leader.mesos.", dns.TypeA, answer(line("leader.mesos.", "A", mesosMasterIP))},
			{"search.marathon.mesos.", dns.TypeA, answer(line("search.marathon.mesos.", "A", "10.0.1.21"), line("search.marathon.mesos.", "A", "10.0.1.22"))},
			{"mesos.", dns.TypeSOA, answer(line("mesos.", "SOA", "ns1.mesos. root.ns1.mesos. 0 60 600 86400 60"))},
			{"cache.marathon.mesos.", dns.TypeA, nxdomain(line("mesos.", "SOA", "ns1.mesos. root.ns1.mesos. 0 60 600 86400 60"))},
		})
	}
	if body := httpBody(t, fmt.Sprintf("http://127.0.0.1:%d/v1/hosts/leader.mesos", httpPort)); !strings.Contains(body, `"ip":"127.0.0.1"`) {
		t.Errorf("/v1/hosts/leader.mesos: %s", body)
	}
	got := configWarnings(logs, path)
	if len(got) != 10 {
		t.Errorf("%d lines about the config, want the sample's 10 warnings:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, l := range got {
		if !strings.Contains(l, "[WARNING] plugin/mesosschema: config ") {
			t.Errorf("not a warning: %s", l)
		}
	}
	for _, want := range []string{"port 8053: the server block's port decides (.:0)", "resolvers: use forward . 8.8.8.8", "listener 0.0.0.0: use bind"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no warning %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// TestMesosConfigEveryField: the file of every documented field, with the
// stand-in master over HTTPS asking for basic auth: refused for CertFile
// by name; without certFile and keyFile it starts, fetches with the file's
// credentials, answers in the file's domain, and its secrets appear in no
// log line and not in /v1/config.
func TestMesosConfigEveryField(t *testing.T) {
	const basicSecret, zkSecret = "every-field-s3cr3t", "zk-s3cr3t"
	logs := captureLog(t)
	master, err := mesosmaster.Start(mesosmaster.Options{State: exampleMesosState(t), TLS: true, Principal: "mesos-dns", Secret: basicSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Close)
	httpPort := freeLoopbackPort(t)
	set := map[string]any{
		"masters":          []string{master.Addr()},
		"zk":               fmt.Sprintf("zk://dns:%s@127.0.0.1:%d/mesos", zkSecret, freeLoopbackPort(t)),
		"httpport":         httpPort,
		"caCertFile":       master.CAFile(),
		"mesosCredentials": map[string]string{"principal": "mesos-dns", "secret": basicSecret},
		"ttl":              5,
	}
	path := mesosConfigFile(t, "mesos-dns-config.every-field.json", set)
	if err := startError(t, configCorefile(path)); !strings.Contains(err.Error(), "config "+path+": CertFile: client certificates") {
		t.Fatalf("error %v, want one naming CertFile", err)
	}
	path = mesosConfigFile(t, "mesos-dns-config.every-field.json", set, "certFile", "keyFile")
	s := startServer(t, configCorefile(path))
	soa := rrLine("cluster.example.", "SOA", "dns.cluster.example. admin.cluster.example. 0 61 601 86401 31")
	checkAll(t, s, "udp", []dnsCase{
		{"leader.cluster.example.", dns.TypeA, answer(rrLine("leader.cluster.example.", "A", mesosMasterIP))},
		{"cluster.example.", dns.TypeSOA, answer(soa)},
	})
	config := httpBody(t, fmt.Sprintf("http://127.0.0.1:%d/v1/config", httpPort))
	if !strings.Contains(config, `"secret":"******"`) || !strings.Contains(config, `"MesosAuthentication":"basic"`) {
		t.Errorf("/v1/config: %s", config)
	}
	logs.mu.Lock()
	logText := logs.buf.String()
	logs.mu.Unlock()
	for _, secret := range []string{basicSecret, zkSecret} {
		if strings.Contains(config, secret) || strings.Contains(logText, secret) {
			t.Errorf("the secret %q is in /v1/config or the log", secret)
		}
	}
	if n := len(configWarnings(logs, path)); n != 13 {
		t.Errorf("%d lines about the config, want 13 warnings", n)
	}
}
