package mesosschema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// FuzzState reads any state a master could send: one that decodes must
// make records without a panic, every name a valid DNS name below the
// zone, every SRV target a name with addresses; and the server must
// answer each of its names (and a reverse name of each address).
func FuzzState(f *testing.F) {
	for _, p := range []string{"../pkg/mesosstate/testdata/small.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	seeds, _ := filepath.Glob("../pkg/mesosstate/testdata/fuzz/FuzzDecode/*")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st, err := mesosstate.Decode(body)
		if err != nil {
			return
		}
		m := testServer(t, st, "10.0.0.1:5050", "[fd00::1]:5050")
		m.gen.ipSources = mesosstate.ValidIPSources
		g := generate(st, &m.gen, &enumeration{zone: "mesos."})
		b := &builder{m: m}
		b.offer(g, testNow)
		b.Publish()
		for name, set := range g.sets {
			if _, ok := dns.IsDomainName(name + ".mesos."); !ok || !validName(name, m.gen.maxName) || strings.ContainsAny(name, " \\") {
				t.Fatalf("invalid name %q", name)
			}
			for _, s := range set.SRVs() {
				if t := g.sets[s.Target]; t == nil || t.NumEndpoints() == 0 {
					panic("SRV record of " + name + " to " + s.Target + ", which has no address")
				}
			}
			for _, qtype := range []uint16{dns.TypeA, dns.TypeSRV, dns.TypeANY} {
				if r := ask(t, m, name+".mesos.", qtype); r.Rcode != dns.RcodeSuccess {
					t.Fatalf("%s: %s", name, dns.RcodeToString[r.Rcode])
				}
			}
			for _, a := range addrsOf(set) {
				rev, _ := dns.ReverseAddr(a.String())
				ask(t, m, rev, dns.TypePTR)
			}
		}
	})
}
