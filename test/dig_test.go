package test

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// digReply is what the tests read of dig's output: the header's status and
// flags, and the record sections, one record a line with fields separated
// by single spaces.
type digReply struct {
	status                        string
	flags                         []string
	answer, authority, additional []string
	out                           string // the whole output, for failures
}

var (
	digStatus = regexp.MustCompile(`status: ([A-Z]+)`)
	digFlags  = regexp.MustCompile(`;; flags: ([a-z ]+);`)
)

// digRun runs the real dig against addr (host:port) with args (name, type,
// options) and parses its output. tcp adds +tcp: with port 0 in the
// Corefile the UDP and TCP ports differ, so addr must match. A missing dig
// fails the test: hack/deps.sh installs it, and `make test` runs that.
func digRun(t testing.TB, addr string, tcp bool, args ...string) digReply {
	t.Helper()
	bin, err := exec.LookPath("dig")
	if err != nil {
		t.Fatalf("dig is not installed: run hack/deps.sh (it installs bind9-dnsutils): %v", err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("dig: address %q: %v", addr, err)
	}
	argv := append([]string{"@" + host, "-p", port, "+tries=1", "+time=5"}, args...)
	if tcp {
		argv = append(argv, "+tcp")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return parseDig(string(out))
}

// parseDig reads dig's default output format.
func parseDig(out string) digReply {
	r := digReply{out: out}
	if m := digStatus.FindStringSubmatch(out); m != nil {
		r.status = m[1]
	}
	if m := digFlags.FindStringSubmatch(out); m != nil {
		r.flags = strings.Fields(m[1])
	}
	var section *[]string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, ";; ANSWER SECTION:"):
			section = &r.answer
		case strings.HasPrefix(line, ";; AUTHORITY SECTION:"):
			section = &r.authority
		case strings.HasPrefix(line, ";; ADDITIONAL SECTION:"):
			section = &r.additional
		case strings.TrimSpace(line) == "":
			section = nil
		case section != nil && !strings.HasPrefix(line, ";"):
			*section = append(*section, strings.Join(strings.Fields(line), " "))
		}
	}
	return r
}
