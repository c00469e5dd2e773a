package mesosschema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
)

// configResult is what parsing a stanza with `config FILE` gave: the
// handler, the error, and the warnings logged (the text after the file's
// name).
type configResult struct {
	m        *Mesosschema
	err      error
	warnings []string
}

// parseWithConfig writes body as a config.json and parses a stanza of
// `config` and the lines given, capturing the log.
func parseWithConfig(t *testing.T, body string, lines ...string) configResult {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return parseConfigPath(t, path, lines...)
}

func parseConfigPath(t *testing.T, path string, lines ...string) configResult {
	t.Helper()
	logs := captureLog(t)
	stanzaText := "mesosschema {\nconfig " + path + "\n" + strings.Join(lines, "\n") + "\n}"
	c := caddy.NewTestController("dns", stanzaText)
	c.ServerBlockKeys = []string{".:1053"}
	m, err := parse(c)
	return configResult{m: m, err: err, warnings: warningsOf(logText(logs), path)}
}

// logText is what captureLog's buffer holds.
func logText(b *logBuffer) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// warningsOf picks the warning lines about path out of a log.
func warningsOf(log, path string) []string {
	var out []string
	prefix := "[WARNING] plugin/mesosschema: config " + path + ": "
	for line := range strings.SplitSeq(log, "\n") {
		if _, w, ok := strings.Cut(line, prefix); ok {
			out = append(out, w)
		}
	}
	return out
}

// masters makes a config.json of one master and the fields given.
func withMaster(fields string) string {
	if fields != "" {
		fields = ", " + fields
	}
	return `{"masters": ["10.0.0.10:5050"], "httpon": false` + fields + `}`
}

// TestConfigAppliedFields: each field the plugin supports, alone beside a
// master, is applied, with no warning.
func TestConfigAppliedFields(t *testing.T) {
	for _, tc := range []struct {
		fields string
		check  func(m *Mesosschema) bool
	}{
		{`"masters": ["10.0.0.11:5050", "10.0.0.12:5050"]`, func(m *Mesosschema) bool {
			return slices.Equal(m.master.Masters, []string{"10.0.0.11:5050", "10.0.0.12:5050"}) && slices.Equal(m.gen.masters, m.master.Masters)
		}},
		{`"zk": "zk://10.0.0.10:2181/mesos"`, func(m *Mesosschema) bool { return m.master.ZK == "zk://10.0.0.10:2181/mesos" }},
		{`"refreshSeconds": 5`, func(m *Mesosschema) bool { return m.refresh == 5*time.Second }},
		{`"stateTimeoutSeconds": 300`, func(m *Mesosschema) bool { return m.master.Timeout == 300*time.Second }},
		{`"zkDetectionTimeout": 7`, func(m *Mesosschema) bool { return m.master.ZKTimeout == 7*time.Second }},
		{`"ttl": 0`, func(m *Mesosschema) bool { return m.TTL == 0 }},
		{`"ttl": 3600`, func(m *Mesosschema) bool { return m.TTL == 3600 }},
		{`"domain": "Cluster.Example"`, func(m *Mesosschema) bool {
			return slices.Equal(m.Zones, []string{"cluster.example."}) && m.SOA.NS == "ns1.cluster.example."
		}},
		{`"SOAMname": "dns.mesos", "SOARname": "admin@mesos"`, func(m *Mesosschema) bool {
			return m.SOA.NS == "dns.mesos." && m.SOA.Mbox == "admin.mesos." && m.gen.nsName == "dns"
		}},
		{`"SOARefresh": 61, "SOARetry": 601, "SOAExpire": 86401, "SOAMinttl": 31`, func(m *Mesosschema) bool {
			return m.SOA.Refresh == 61 && m.SOA.Retry == 601 && m.SOA.Expire == 86401 && m.SOA.MinTTL == 31
		}},
		{`"IPSources": ["docker", "host"]`, func(m *Mesosschema) bool { return slices.Equal(m.gen.ipSources, []string{"docker", "host"}) }},
		{`"EnforceRFC952": true`, func(m *Mesosschema) bool { return m.gen.rfc952 }},
		{`"EnforceRFC952": false`, func(m *Mesosschema) bool { return !m.gen.rfc952 }},
		{`"httpon": true, "HTTPListener": "0.0.0.0", "httpport": 8124, "EnumerationOn": true`, func(m *Mesosschema) bool {
			return m.httpAddr == "0.0.0.0:8124" && m.keepState
		}},
		{`"httpon": false, "httpport": 8124`, func(m *Mesosschema) bool { return m.httpAddr == "" && !m.keepState }},
		{`"httpon": false, "EnumerationOn": false`, func(m *Mesosschema) bool { return m.httpAddr == "" }},
		{`"mesosHTTPSOn": true, "caCertFile": "/etc/ca.pem"`, func(m *Mesosschema) bool {
			return m.master.Scheme == "https" && m.master.CAFile == "/etc/ca.pem"
		}},
		{`"mesosHTTPSOn": true, "mesosAuthentication": "basic", "mesosCredentials": {"principal": "p", "secret": "s"}`, func(m *Mesosschema) bool {
			b := m.master.Auth.Basic
			return b != nil && b.Principal == "p" && b.Secret == "s" && m.master.Auth.IAM == nil
		}},
		{`"mesosHTTPSOn": true, "mesosAuthentication": "iam", "IAMConfigFile": "/etc/iam.json"`, func(m *Mesosschema) bool {
			return m.master.Auth.IAM != nil && m.master.Auth.IAM.ConfigFile == "/etc/iam.json" && m.master.Auth.Basic == nil
		}},
		{`"mesosAuthentication": ""`, func(m *Mesosschema) bool { return m.master.Auth.Basic == nil && m.master.Auth.IAM == nil }},
		{`"SetTruncateBit": true`, func(*Mesosschema) bool { return true }},
		// Mesos-DNS decodes with encoding/json: any case, the last key wins,
		// null leaves the default.
		{`"REFRESHSECONDS": 7, "refreshseconds": 8`, func(m *Mesosschema) bool { return m.refresh == 8*time.Second }},
		{`"HttpOn": true, "httpPort": 8125, "httplistener": "127.0.0.2"`, func(m *Mesosschema) bool { return m.httpAddr == "127.0.0.2:8125" }},
		{`"ttl": null, "IPSources": null`, func(m *Mesosschema) bool { return m.TTL == defaultTTL && len(m.gen.ipSources) == 3 }},
	} {
		r := parseWithConfig(t, withMaster(tc.fields))
		if r.err != nil {
			t.Errorf("%s: %v", tc.fields, r.err)
			continue
		}
		if !tc.check(r.m) {
			t.Errorf("%s: not applied: master %+v refresh %s ttl %d zones %v SOA %+v gen %+v http %q", tc.fields, r.m.master, r.m.refresh,
				r.m.TTL, r.m.Zones, r.m.SOA, r.m.gen, r.m.httpAddr)
		}
		if len(r.warnings) != 0 {
			t.Errorf("%s: warnings %q, want none", tc.fields, r.warnings)
		}
	}
}

// TestConfigWarnedFields: each field the Corefile decides, or that is not
// kept, starts the plugin with one warning that names the field and the
// Corefile line that decides it.
func TestConfigWarnedFields(t *testing.T) {
	for _, tc := range []struct{ fields, want string }{
		{`"port": 8053`, "port 8053: the server block's port decides (.:1053)"},
		{`"listener": "0.0.0.0"`, "listener 0.0.0.0: use bind: the server block listens where bind says (all addresses without it)"},
		{`"resolvers": ["8.8.8.8", "8.8.4.4"]`, "resolvers: use forward . 8.8.8.8 8.8.4.4 after mesosschema"},
		{`"zoneResolvers": {"weave": ["172.17.0.1"], "consul": ["10.0.0.5:8600"]}`,
			"zoneResolvers: use a server block per zone with its forward (consul { forward . 10.0.0.5:8600 }; weave { forward . 172.17.0.1 })"},
		{`"timeout": 5`, "timeout 5: forward decides the timeouts of forwarded queries"},
		{`"externalon": true`, "externalon true: forward decides: names outside the zone go to the plugins after mesosschema (none answers them without forward)"},
		{`"recurseon": true`, "recurseOn true: forward decides: the zone's answers do not set RA, forwarded answers carry the upstream's"},
		{`"dnson": true`, "dnson: the server block decides: it serves DNS"},
		{`"SOASerial": 12`, "SOASerial: not kept, as in Mesos-DNS (which sets it to its start time): the serial changes when a record does"},
		{`"SetTruncateBit": false`, "SetTruncateBit false: not kept: replies too large for UDP always carry TC, as RFC 1035 asks"},
		{`"srvRecordDefaultWeight": 1`, "srvRecordDefaultWeight 1: not kept: every SRV record has weight 0, and equal weights share the load alike"},
		{`"File": "/x.json"`, "File: ignored: Mesos-DNS sets it itself to the file's path"},
		{`"zkDetectionTimeout": 0`, "zkDetectionTimeout 0: no limit is not kept: zk_timeout stays 30s, after which the masters are asked"},
		{`"ns": "ns1"`, "ns: not a field of Mesos-DNS's config.json: ignored, as Mesos-DNS does"},
		{`"caCertFile": "/etc/ca.pem"`, "CACertFile: not used: MesosHTTPSOn is not true, the masters are asked over http"},
		{`"mesosCredentials": {"principal": "p", "secret": "s"}`, "mesosCredentials: not sent: mesosAuthentication is not basic"},
		{`"IAMConfigFile": "/etc/iam.json"`, "IAMConfigFile: not used: mesosAuthentication is not iam"},
		{`"httpon": true`, "HTTPListener: not set: the HTTP interface listens on 127.0.0.1:8123, not on Mesos-DNS's 0.0.0.0 (it has no authentication); " +
			"set HTTPListener, or mesosschema's http option, to listen elsewhere"},
	} {
		r := parseWithConfig(t, withMaster(tc.fields))
		if r.err != nil {
			t.Errorf("%s: %v", tc.fields, r.err)
			continue
		}
		if !slices.Equal(r.warnings, []string{tc.want}) {
			t.Errorf("%s: warnings\n%q\nwant\n%q", tc.fields, r.warnings, tc.want)
		}
	}
}

// TestConfigRefusedFields: a field that cannot be honoured, or a value out
// of range, is refused with an error naming the field; no error quotes a
// secret.
func TestConfigRefusedFields(t *testing.T) {
	for _, tc := range []struct{ fields, want string }{
		{`"dnson": false`, "dnson false: mesosschema answers DNS in its server block"},
		{`"httpon": true, "HTTPListener": "127.0.0.1", "EnumerationOn": false`, "EnumerationOn false: /v1/enumerate cannot be turned off"},
		{`"certFile": "/c.pem"`, "CertFile: client certificates for the masters are not supported"},
		{`"keyFile": "/k.pem"`, "KeyFile: client certificates for the masters are not supported"},
		{`"refreshSeconds": 0`, "refreshSeconds: 0 is not a number of seconds of at least 1"},
		{`"stateTimeoutSeconds": -1`, "stateTimeoutSeconds: -1 is not a number of seconds of at least 1"},
		{`"zkDetectionTimeout": -1`, "zkDetectionTimeout: -1 is a negative number of seconds"},
		{`"ttl": 3601`, "ttl: 3601 is not a number of seconds from 0 to 3600"},
		{`"domain": "a..b"`, `domain: zone "a..b" is not a domain name`},
		{`"domain": "10.0.0.0/8"`, "at least one forward zone"},
		{`"SOAMname": "a..b"`, `SOAMname: "a..b" is not a domain name`},
		{`"SOARname": ""`, `SOARname: "" is not a domain name`},
		{`"SOARefresh": 0`, "SOARefresh: 0 is not a number of seconds above 0"},
		{`"SOAMinttl": 4294967296`, "SOAMinttl: 4294967296 is not a number of seconds above 0"},
		{`"IPSources": ["rkt"]`, `IPSources: bad IP sources: unknown source "rkt"`},
		{`"IPSources": []`, "IPSources: bad IP sources: none given"},
		{`"httpon": true, "httpport": 70000`, "httpport: 70000 is not a port from 1 to 65535"},
		{`"httpon": true, "HTTPListener": "10.0.0.1:80"`, `HTTPListener "10.0.0.1:80": not an IP address to listen on`},
		{`"mesosAuthentication": "kerberos"`, `mesosAuthentication "kerberos": want "", basic or iam`},
		{`"mesosHTTPSOn": true, "mesosAuthentication": "basic"`, "mesosCredentials: mesosAuthentication basic needs a principal and a secret"},
		{`"mesosHTTPSOn": true, "mesosAuthentication": "basic", "mesosCredentials": {"principal": "p"}`, "mesosCredentials: mesosAuthentication basic needs"},
		{`"mesosHTTPSOn": true, "mesosAuthentication": "iam"`, "IAMConfigFile: mesosAuthentication iam needs the service account's file"},
		{`"mesosAuthentication": "basic", "mesosCredentials": {"principal": "p", "secret": "s3cr3t"}`, "credentials over plain http refused"},
		{`"masters": ["10.0.0.1"]`, `master "10.0.0.1"`},
		{`"zk": "http://10.0.0.1:2181/mesos"`, "zk"},
		{`"refreshSeconds": "60"`, "RefreshSeconds: a JSON string where a int is wanted"},
		{`"mesosCredentials": {"principal": "p", "secret": 424242}`, "MesosCredentials.secret: a JSON number where a string is wanted"},
	} {
		r := parseWithConfig(t, withMaster(tc.fields))
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.fields, r.err, tc.want)
			continue
		}
		for _, secret := range []string{"s3cr3t", "424242"} {
			if strings.Contains(r.err.Error(), secret) {
				t.Errorf("%s: the error %q quotes the secret", tc.fields, r.err)
			}
		}
	}
}

// TestConfigFileErrors: a missing, oversized, non-JSON file, and config
// twice or without its argument.
func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"ns": "`+strings.Repeat("x", maxConfigFile)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"masters": ["10.0.0.10:5050"], "mesosCredentials": {"secret": "s3cr3t"`, "not a JSON object: a syntax error at byte"},
		{`["10.0.0.10:5050"]`, "not a JSON object"},
		{`{"masters": ["10.0.0.10:5050"], "secret": s3cr3t}`, "a syntax error at byte 43"},
	} {
		r := parseWithConfig(t, tc.body)
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) || strings.Contains(r.err.Error(), "s3cr3t") {
			t.Errorf("%s: error %v, want one with %q and no secret", tc.body, r.err, tc.want)
		}
	}
	if r := parseConfigPath(t, filepath.Join(dir, "none.json")); r.err == nil || !strings.Contains(r.err.Error(), "none.json: open") {
		t.Errorf("missing file: %v", r.err)
	}
	if r := parseConfigPath(t, big); r.err == nil || !strings.Contains(r.err.Error(), "larger than 1 MiB") {
		t.Errorf("large file: %v", r.err)
	}
	for _, tc := range []struct{ corefile, want string }{
		{"mesosschema {\nconfig\n}", "Wrong argument count"},
		{"mesosschema {\nconfig a.json b.json\n}", "Wrong argument count"},
		{"mesosschema {\nconfig a.json\nconfig b.json\n}", "config: given twice (a.json, b.json)"},
	} {
		if _, err := parse(caddy.NewTestController("dns", tc.corefile)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.corefile, err, tc.want)
		}
	}
}

// TestConfigStanzaOverrides: an option written beside config wins over the
// file's field, wherever it is written; the others still come from the file.
func TestConfigStanzaOverrides(t *testing.T) {
	body := `{"masters": ["10.0.0.10:5050"], "zk": "zk://10.0.0.10:2181/mesos", "refreshSeconds": 5, "stateTimeoutSeconds": 6,
		"zkDetectionTimeout": 7, "ttl": 8, "domain": "file.example", "IPSources": ["host"], "EnforceRFC952": true,
		"SOAMname": "ns.file.example", "SOARname": "a.file.example", "SOARefresh": 9, "SOARetry": 10, "SOAExpire": 11, "SOAMinttl": 12,
		"httpon": true, "HTTPListener": "0.0.0.0", "httpport": 8124, "mesosHTTPSOn": false, "caCertFile": "/file-ca.pem",
		"mesosAuthentication": "iam", "IAMConfigFile": "/file-iam.json"}`
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := captureLog(t)
	c := caddy.NewTestController("dns", `mesosschema stanza.example {
		masters 10.0.0.20:5050
		zk zk://10.0.0.20:2181/mesos
		refresh 50s
		state_timeout 60s
		zk_timeout 70s
		ttl 80
		ip_sources netinfo
		soa_mname ns.stanza.example
		soa_rname b.stanza.example
		soa_refresh 90
		soa_retry 100
		soa_expire 110
		soa_minttl 120
		http 127.0.0.1:8125
		tls /stanza-ca.pem
		basic_auth p s
		config `+path+`
	}`)
	m, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.master.Masters, []string{"10.0.0.20:5050"}) || m.master.ZK != "zk://10.0.0.20:2181/mesos" ||
		m.refresh != 50*time.Second || m.master.Timeout != 60*time.Second || m.master.ZKTimeout != 70*time.Second || m.TTL != 80 ||
		!slices.Equal(m.Zones, []string{"stanza.example."}) || !slices.Equal(m.gen.ipSources, []string{"netinfo"}) ||
		m.httpAddr != "127.0.0.1:8125" || m.master.Scheme != "https" || m.master.CAFile != "/stanza-ca.pem" ||
		m.master.Auth.Basic == nil || m.master.Auth.IAM != nil {
		t.Errorf("stanza options did not win: master %+v refresh %s ttl %d zones %v sources %v http %q", m.master, m.refresh, m.TTL, m.Zones, m.gen.ipSources, m.httpAddr)
	}
	want := dnszone.SOAFields{NS: "ns.stanza.example.", Mbox: "b.stanza.example.", Refresh: 90, Retry: 100, Expire: 110, MinTTL: 120}
	if m.SOA != want {
		t.Errorf("SOA %+v, want %+v", m.SOA, want)
	}
	// The file's EnforceRFC952 has no stanza option written: it applies.
	if !m.gen.rfc952 {
		t.Error("EnforceRFC952 from the file not applied beside the stanza's options")
	}
	if w := warningsOf(logText(logs), path); len(w) != 0 {
		t.Errorf("warnings %q, want none: the fields overridden are not the file's", w)
	}
}

// TestConfigSample: a file with the fields of the config.json.sample
// Mesos-DNS ships starts the plugin with warnings only, one per field the
// Corefile decides, and applies the rest.
func TestConfigSample(t *testing.T) {
	path := "testdata/mesos-dns-config.sample.json"
	r := parseConfigPath(t, path)
	if r.err != nil {
		t.Fatal(r.err)
	}
	m := r.m
	if !slices.Equal(m.master.Masters, []string{"127.0.0.1:5050"}) || m.master.ZK != "zk://127.0.0.1:2181/mesos" ||
		m.master.Timeout != 300*time.Second || m.refresh != time.Minute || m.TTL != 60 || !slices.Equal(m.Zones, []string{"mesos."}) ||
		!slices.Equal(m.gen.ipSources, []string{"mesos", "host"}) || m.gen.rfc952 || m.httpAddr != "127.0.0.1:8123" || !m.keepState {
		t.Errorf("sample not applied: master %+v refresh %s ttl %d zones %v sources %v http %q", m.master, m.refresh, m.TTL, m.Zones, m.gen.ipSources, m.httpAddr)
	}
	want := dnszone.SOAFields{NS: "ns1.mesos.", Mbox: "root.ns1.mesos.", Refresh: 60, Retry: 600, Expire: 86400, MinTTL: 60}
	if m.SOA != want {
		t.Errorf("SOA %+v, want %+v", m.SOA, want)
	}
	wantWarnings := []string{
		"ns: not a field of Mesos-DNS's config.json: ignored, as Mesos-DNS does",
		"HTTPListener: not set: the HTTP interface listens on 127.0.0.1:8123, not on Mesos-DNS's 0.0.0.0 (it has no authentication); " +
			"set HTTPListener, or mesosschema's http option, to listen elsewhere",
		"dnson: the server block decides: it serves DNS",
		"port 8053: the server block's port decides (.:1053)",
		"listener 0.0.0.0: use bind: the server block listens where bind says (all addresses without it)",
		"resolvers: use forward . 8.8.8.8 after mesosschema",
		"timeout 5: forward decides the timeouts of forwarded queries",
		"externalon true: forward decides: names outside the zone go to the plugins after mesosschema (none answers them without forward)",
		"recurseOn true: forward decides: the zone's answers do not set RA, forwarded answers carry the upstream's",
		"srvRecordDefaultWeight 1: not kept: every SRV record has weight 0, and equal weights share the load alike",
	}
	if !slices.Equal(r.warnings, wantWarnings) {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(r.warnings, "\n"), strings.Join(wantWarnings, "\n"))
	}
}

// TestConfigEveryField: the file with every field Mesos-DNS documents is
// refused for the one it cannot honour, CertFile (a client certificate),
// naming it; without certFile and keyFile it starts, every other field
// applied or warned, and no secret in a warning.
func TestConfigEveryField(t *testing.T) {
	path := "testdata/mesos-dns-config.every-field.json"
	r := parseConfigPath(t, path)
	if r.err == nil || !strings.Contains(r.err.Error(), "config "+path+": CertFile: client certificates for the masters are not supported") {
		t.Fatalf("error %v, want one naming CertFile", r.err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "certFile")
	delete(fields, "keyFile")
	body, _ := json.Marshal(fields)
	r = parseWithConfig(t, string(body))
	if r.err != nil {
		t.Fatal(r.err)
	}
	m := r.m
	b := m.master.Auth.Basic
	if !slices.Equal(m.master.Masters, []string{"10.0.0.10:5050", "10.0.0.11:5050"}) || m.master.ZK != "zk://dns:zk-s3cr3t@10.0.0.10:2181,10.0.0.11:2181/mesos" ||
		m.refresh != 15*time.Second || m.master.Timeout != 20*time.Second || m.master.ZKTimeout != 10*time.Second || m.TTL != 30 ||
		!slices.Equal(m.Zones, []string{"cluster.example."}) || !slices.Equal(m.gen.ipSources, []string{"netinfo", "docker", "host"}) || !m.gen.rfc952 ||
		m.httpAddr != "127.0.0.1:8124" || m.master.Scheme != "https" || m.master.CAFile != "/etc/mesos/ca.pem" ||
		b == nil || b.Principal != "mesos-dns" || b.Secret != "file-s3cr3t" || m.master.Auth.IAM != nil {
		t.Errorf("not applied: master %+v refresh %s ttl %d zones %v gen %+v http %q", m.master, m.refresh, m.TTL, m.Zones, m.gen, m.httpAddr)
	}
	want := dnszone.SOAFields{NS: "dns.cluster.example.", Mbox: "admin.cluster.example.", Refresh: 61, Retry: 601, Expire: 86401, MinTTL: 31}
	if m.SOA != want || m.gen.nsName != "dns" {
		t.Errorf("SOA %+v, want %+v", m.SOA, want)
	}
	wantWarnings := []string{
		"SOASerial: not kept, as in Mesos-DNS (which sets it to its start time): the serial changes when a record does",
		"IAMConfigFile: not used: mesosAuthentication is not iam",
		"dnson: the server block decides: it serves DNS",
		"port 53: the server block's port decides (.:1053)",
		"listener 10.0.0.2: use bind: the server block listens where bind says (all addresses without it)",
		"resolvers: use forward . 10.0.0.1 10.0.0.3 after mesosschema",
		"zoneResolvers: use a server block per zone with its forward (consul { forward . 10.0.0.5:8600 }; weave { forward . 172.17.0.1 })",
		"timeout 3: forward decides the timeouts of forwarded queries",
		"externalon false: forward decides: names outside the zone go to the plugins after mesosschema (none answers them without forward)",
		"recurseOn false: forward decides: the zone's answers do not set RA, forwarded answers carry the upstream's",
		"SetTruncateBit false: not kept: replies too large for UDP always carry TC, as RFC 1035 asks",
		"srvRecordDefaultWeight 2: not kept: every SRV record has weight 0, and equal weights share the load alike",
		"File: ignored: Mesos-DNS sets it itself to the file's path",
	}
	if !slices.Equal(r.warnings, wantWarnings) {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(r.warnings, "\n"), strings.Join(wantWarnings, "\n"))
	}
	if strings.Contains(strings.Join(r.warnings, "\n"), "s3cr3t") {
		t.Error("a warning quotes a secret")
	}
}
