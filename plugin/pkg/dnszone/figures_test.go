package dnszone

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/miekg/dns"
)

// TestDocFigures keeps the figures the docs quote about the store and the
// query path tied to the code: each is measured here, and each doc must
// say the measured figure in the words it uses. A change that moves a
// figure fails here until the docs say the new one.
func TestDocFigures(t *testing.T) {
	endpointBytes := int(unsafe.Sizeof(endpoint{}))
	ptrBytes := int(unsafe.Sizeof(ptrEntry{}))
	addrBytes := len(endpoint{}.addr)
	answerAllocs := lookupAllocs(t, "web.ns1", dns.TypeA)
	negativeAllocs := lookupAllocs(t, "nothing.ns1", dns.TypeA)
	// The most of an answer of ten records: ten addresses, ten SRV
	// records with their ten addresses, names made up for each.
	tenAllocs := max(lookupAllocs(t, "db.ns1", dns.TypeA), lookupAllocs(t, "db.ns1", dns.TypeSRV),
		lookupAllocs(t, "_pg._tcp.db.ns1", dns.TypeSRV), lookupAllocs(t, "web.ns1", dns.TypeSRV))
	t.Logf("endpoint %d B, PTR entry %d B, address %d B; one-record answer %d allocs, ten records %d, negative answer %d allocs",
		endpointBytes, ptrBytes, addrBytes, answerAllocs, tenAllocs, negativeAllocs)

	words := map[int]string{1: "one", 2: "two", 3: "three"}
	quotes := []struct{ file, phrase string }{
		{"doc.go", fmt.Sprintf("an endpoint keeps %d bytes in its service and %d in the PTR index", endpointBytes, ptrBytes)},
		{"facts.go", fmt.Sprintf("endpoint is how a service keeps an address: %d bytes", endpointBytes)},
		{"snapshot.go", fmt.Sprintf("addresses that came or went. %d bytes", ptrBytes)},
		{"../../../docs/architecture.md", fmt.Sprintf("%d-byte endpoints", endpointBytes)},
		{"../../../docs/architecture.md", fmt.Sprintf("%s allocation for a one-record answer", words[answerAllocs])},
		{"../../../docs/architecture.md", fmt.Sprintf("%s for an A, AAAA or SRV answer of ten", words[tenAllocs])},
		{"doc.go", fmt.Sprintf("an answer are built in %s allocation", words[tenAllocs])},
		{"../../kubeschema/README.md", fmt.Sprintf("addresses in %d-byte form", addrBytes)},
		{"../../kubeschema/README.md", fmt.Sprintf("%s allocation for a one-record or negative answer", words[answerAllocs])},
	}
	if answerAllocs != negativeAllocs {
		t.Errorf("a one-record answer takes %d allocations and a negative one %d: kubeschema's README says they are the same", answerAllocs, negativeAllocs)
	}
	for _, q := range quotes {
		text, err := os.ReadFile(q.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(prose(string(text)), prose(q.phrase)) {
			t.Errorf("%s does not say %q, the measured figure", q.file, q.phrase)
		}
	}
}

// prose is text as a reader sees it: words separated by one space, the
// comment markers of Go source gone.
func prose(text string) string {
	words := strings.Fields(text)
	kept := words[:0]
	for _, w := range words {
		if w != "//" {
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " ")
}

// lookupAllocs counts the allocations of answering name (a lookup and its
// negative section when it has no answer), as ServeDNS does after parsing
// the question.
func lookupAllocs(t *testing.T, name string, qtype uint16) int {
	t.Helper()
	eps := make([]EndpointFacts, 10)
	for i := range eps {
		eps[i] = NewEndpoint(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), fmt.Sprintf("db-%d", i), 0, true)
	}
	srv := testServer(false, NewVirtual("web.ns1", []netip.Addr{netip.MustParseAddr("10.96.0.7")}, []SRVPort{{Name: "http", Proto: "tcp", Number: 80}}),
		NewHeadless("db.ns1", eps, []SRVPort{{Name: "pg", Proto: "tcp", Number: 5432}}, nil))
	snap := srv.Snapshot()
	r := new(dns.Msg)
	r.SetQuestion(name+".svc.cluster.local.", qtype)
	q := &Query{Ctx: context.Background(), Req: r, Snap: snap, Qtype: qtype, Owner: r.Question[0].Name, Lower: r.Question[0].Name}
	rest := name + ".svc"
	if res := srv.lookup(q, rest); name != "nothing.ns1" && len(res.Answer) == 0 {
		t.Fatalf("%s %s: no answer", name, dns.TypeToString[qtype])
	}
	allocs := testing.AllocsPerRun(200, func() {
		res := srv.lookup(q, rest)
		if len(res.Answer) == 0 {
			_ = srv.negative(q)
		}
	})
	return int(allocs)
}
