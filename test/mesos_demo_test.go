package test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// The demo of `make run-mesos`: hack/run-mesos.sh starts the stand-in
// master with its master_args and serves Corefile.mesos, then prints dig
// and curl commands. The test reads both files, starts them the same way
// (on free ports) and runs every printed command, so that none can drift.

const (
	demoScript   = "../hack/run-mesos.sh"
	demoCorefile = "../Corefile.mesos"
	// demoDNS and demoHTTP are where the demo's commands ask.
	demoDNS  = "127.0.0.1 -p 1053"
	demoHTTP = "http://127.0.0.1:8123"
)

var (
	demoMasterArgs = regexp.MustCompile(`(?m)^master_args=\((.*)\)$`)
	// A printed command: indented, maybe followed by a comment in
	// parentheses. anyDig and anyCurl catch those the others would miss.
	demoDig  = regexp.MustCompile(`(?m)^\s+dig @` + regexp.QuoteMeta(demoDNS) + ` (.+?)(?:\s+\((.*)\))?$`)
	demoCurl = regexp.MustCompile(`(?m)^\s+curl -s ` + regexp.QuoteMeta(demoHTTP) + `(/\S*)$`)
	anyDig   = regexp.MustCompile(`(?m)^\s+dig\s`)
	anyCurl  = regexp.MustCompile(`(?m)^\s+curl\s`)
	logLine  = regexp.MustCompile(`(?m)^\s*log\s*\n`)
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startDemoMaster starts the stand-in master as the script's master_args
// say (the flags of internal/mesosmaster/cmd/mesosmaster), on a free port
// instead of -listen's, and returns it with -listen's address.
func startDemoMaster(t *testing.T, script string) (*mesosmaster.Master, string) {
	t.Helper()
	m := demoMasterArgs.FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("%s: no master_args=(...) line", demoScript)
	}
	fs := flag.NewFlagSet("mesosmaster", flag.ContinueOnError)
	listen := fs.String("listen", "", "")
	own := fs.Bool("own", false, "")
	stateFile := fs.String("state", "", "")
	leader := fs.String("leader", "", "")
	if err := fs.Parse(strings.Fields(m[1])); err != nil || fs.NArg() > 0 || *stateFile == "" {
		t.Fatalf("%s: master_args %q: %v (want the command's flags, -state among them)", demoScript, m[1], err)
	}
	body, err := os.ReadFile("../" + *stateFile)
	if err != nil {
		t.Fatal(err)
	}
	opts := mesosmaster.Options{Leader: *leader, Body: body}
	if *own {
		st, err := mesosstate.Decode(body)
		if err != nil {
			t.Fatalf("%s: %v", *stateFile, err)
		}
		opts.State, opts.Body = st, nil
	}
	master, err := mesosmaster.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Close)
	return master, *listen
}

// demoQuestion reads the arguments of a printed dig command: NAME [TYPE]
// (A by default, as dig), or -x ADDRESS; +tcp.
func demoQuestion(t *testing.T, args []string) (name string, qtype uint16, tcp bool) {
	t.Helper()
	qtype = dns.TypeA
	var plain []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-x" && i+1 < len(args):
			i++
			name, qtype = ptrName(t, args[i]), dns.TypePTR
		case a == "+tcp":
			tcp = true
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			t.Fatalf("dig %s: option %s is not read here", strings.Join(args, " "), a)
		default:
			plain = append(plain, a)
		}
	}
	switch {
	case name != "" && len(plain) == 0:
	case name == "" && len(plain) == 1:
		name = dns.Fqdn(plain[0])
	case name == "" && len(plain) == 2 && dns.StringToType[strings.ToUpper(plain[1])] != 0:
		name, qtype = dns.Fqdn(plain[0]), dns.StringToType[strings.ToUpper(plain[1])]
	default:
		t.Fatalf("dig %s: want NAME [TYPE] or -x ADDRESS", strings.Join(args, " "))
	}
	return name, qtype, tcp
}

// TestMesosDemoCommands serves Corefile.mesos against the stand-in master
// started as hack/run-mesos.sh starts it, and runs every command the
// script prints: each dig answers NOERROR with at least one record (or
// NXDOMAIN where its comment says so), and each curl a JSON answer with
// records.
func TestMesosDemoCommands(t *testing.T) {
	script, corefile := readFile(t, demoScript), readFile(t, demoCorefile)
	master, listen := startDemoMaster(t, script)
	// The Corefile asks that master and serves where the commands ask.
	for _, want := range []string{".:1053 {", "bind 127.0.0.1", "masters " + listen, "http " + strings.TrimPrefix(demoHTTP, "http://")} {
		if !strings.Contains(corefile, want) {
			t.Fatalf("%s has no %q: the commands of %s would not reach it", demoCorefile, want, demoScript)
		}
	}
	upstream := startStubUpstream(t)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	// Without log, which would print every query of the test.
	served := logLine.ReplaceAllString(corefile, "")
	served = forTest(served, readmeEnv{upstream: upstream.addr, mesosMaster: master.Addr(), mesosHTTP: httpAddr})
	s := startServer(t, served)

	checkDemoDigs(t, s, demoScript, script, 10)
	curls := demoCurl.FindAllStringSubmatch(script, -1)
	if n := len(anyCurl.FindAllString(script, -1)); n != len(curls) || n == 0 {
		t.Fatalf("%s prints %d curl commands, %d of them `curl -s %s/...`", demoScript, n, len(curls), demoHTTP)
	}
	for _, c := range curls {
		cmd := "curl -s " + demoHTTP + c[1]
		body := httpBody(t, "http://"+httpAddr+c[1])
		if !strings.HasPrefix(body, "[{") && !strings.HasPrefix(body, "{") || strings.Contains(body, `"host":""`) {
			t.Errorf("%s: %s; want records in JSON", cmd, body)
		}
	}
}

// checkDemoDigs runs every dig command a demo script prints against s:
// each answers NOERROR with at least one record, or NXDOMAIN where its
// comment says so. It wants at least least of them, all of the form
// `dig @127.0.0.1 -p 1053 NAME [TYPE]`.
func checkDemoDigs(t *testing.T, s *server, path, script string, least int) {
	t.Helper()
	digs := demoDig.FindAllStringSubmatch(script, -1)
	if n := len(anyDig.FindAllString(script, -1)); n != len(digs) || n < least {
		t.Fatalf("%s prints %d dig commands, %d of them `dig @%s NAME [TYPE]`: want at least %d, all of that form", path, n, len(digs), demoDNS, least)
	}
	for _, d := range digs {
		cmd, comment := "dig @"+demoDNS+" "+d[1], d[2]
		name, qtype, tcp := demoQuestion(t, strings.Fields(d[1]))
		if qtype == dns.TypeAXFR {
			rrs, err := axfr(s, name)
			if err != nil || len(rrs) < 2 {
				t.Errorf("%s: %d records, %v", cmd, len(rrs), err)
			}
			continue
		}
		network := "udp"
		if tcp {
			network = "tcp"
		}
		r := s.exchange(t, network, name, qtype)
		if r.Truncated { // as dig does
			r = s.exchange(t, "tcp", name, qtype)
		}
		switch {
		case strings.Contains(comment, "NXDOMAIN"):
			if r.Rcode != dns.RcodeNameError {
				t.Errorf("%s: %s, want NXDOMAIN as its comment says:\n%v", cmd, dns.RcodeToString[r.Rcode], r)
			}
		case r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0:
			t.Errorf("%s: %s with %d records, want NOERROR and records:\n%v", cmd, dns.RcodeToString[r.Rcode], len(r.Answer), r)
		}
	}
}
