package mesosschema

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// exampleRecords reads the records examples/mesos/README.md lists, from its
// code blocks of "name TYPE value" lines, as "TYPE value" by name (an SRV
// value is "port target": priority and weight are the server's).
func exampleRecords(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../../examples/mesos/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	open, plain := false, false // in a code block; one without a language
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			open, plain = !open, !open && line == "```"
			continue
		}
		inBlock := open && plain
		fields := strings.Fields(line)
		if !inBlock || len(fields) < 3 || !slices.Contains([]string{"A", "AAAA", "SRV"}, fields[1]) {
			continue
		}
		out[fields[0]] = append(out[fields[0]], strings.Join(fields[1:], " "))
	}
	if len(out) < 50 {
		t.Fatalf("read %d names from the README: its code blocks changed form", len(out))
	}
	return out
}

// served is what the server answers name with, in the README's form.
func served(t *testing.T, m *Mesosschema, name string) []string {
	t.Helper()
	var out []string
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV} {
		for _, rr := range ask(t, m, name, qtype).Answer {
			switch r := rr.(type) {
			case *dns.A:
				out = append(out, "A "+r.A.String())
			case *dns.AAAA:
				out = append(out, "AAAA "+r.AAAA.String())
			case *dns.SRV:
				out = append(out, "SRV "+strconv.Itoa(int(r.Port))+" "+r.Target)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestRecordedState serves examples/mesos/state.json and checks every
// record its README lists, name by name, with nothing more under those
// names, and the names it says must not exist.
func TestRecordedState(t *testing.T) {
	body, err := os.ReadFile("../../examples/mesos/state.json")
	if err != nil {
		t.Fatal(err)
	}
	st, err := mesosstate.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	m := testServer(t, st)
	for name, want := range exampleRecords(t) {
		slices.Sort(want)
		if got := served(t, m, name); !slices.Equal(got, want) {
			t.Errorf("%s:\n  %s\nwant\n  %s", name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	for _, name := range []string{"cache.marathon.mesos.", "cache-arpms-s1.marathon.mesos.", "_cache._tcp.marathon.mesos.",
		"search-dzd9c-s2.marathon.mesos.", "report.metronome.mesos.", "_web._udp.marathon.mesos."} {
		if r := ask(t, m, name, dns.TypeA); r.Rcode != dns.RcodeNameError {
			t.Errorf("%s: %s, want NXDOMAIN", name, dns.RcodeToString[r.Rcode])
		}
	}
	if got := served(t, m, "Worker-1.MyFramework.mesos."); !slices.Equal(got, []string{"A 192.168.50.7"}) {
		t.Errorf("Worker-1.MyFramework.mesos.: %v", got)
	}
	// A host-network task's address: the agent's is slave.mesos's; the
	// other one (the agent's IPv6 address, which its PID does not carry)
	// is the instance's.
	checkAnswers(t, m, []answerCase{
		{name: "23.1.0.10.in-addr.arpa.", qtype: dns.TypePTR, answer: []string{"23.1.0.10.in-addr.arpa. 60 IN PTR slave.mesos."}},
		{name: "3.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.", qtype: dns.TypePTR,
			answer: []string{"3.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa. 60 IN PTR apiserver-myservice-r1q9r-s2.marathon.mesos."}},
	})
	// No AAAA record but apiserver.myservice's in marathon.
	for _, set := range m.Snapshot().Services() {
		for _, a := range addrsOf(set) {
			if a.Is6() && !strings.HasPrefix(set.Key(), "apiserver-myservice") {
				t.Errorf("%s has the IPv6 address %s", set.Key(), a)
			}
		}
	}
}
