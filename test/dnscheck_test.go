package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// What every suite of whole-server tests shares: the exact comparison of
// replies (rcode, AA flag, question, and the Answer, Authority and
// Additional sections, sorted, serials of SOA records zeroed), polled
// until DNS shows what is expected; the records as zone file lines; the
// SOA serial, zone transfers and large answers; and namespaces of the
// shared API server that are emptied when the test ends.

// Deadlines. Polls end as soon as DNS shows what is expected.
const (
	// settleTimeout bounds how long a new object may take to show in DNS
	// (watch delivery plus one snapshot rebuild), on a loaded machine.
	settleTimeout = 30 * time.Second
	// changeTimeout bounds how long a change of an object may take to show.
	changeTimeout = 20 * time.Second
)

// The zones served.
const (
	clusterZone    = "cluster.local."
	clustersetZone = "clusterset.local."
	reverse4Zone   = "in-addr.arpa."
	reverse6Zone   = "ip6.arpa."
)

// kubeEnv is one test's access to the shared API server.
type kubeEnv struct {
	t    *testing.T
	ctx  context.Context
	kube kubernetes.Interface
	// kubeconfig is the admin kubeconfig the DNS servers use.
	kubeconfig string
}

func newKubeEnv(t *testing.T) *kubeEnv {
	t.Helper()
	c := kubeapi.Shared(t)
	return &kubeEnv{t: t, ctx: t.Context(), kube: c.Client(), kubeconfig: c.Kubeconfig}
}

// namespace creates a namespace named after prefix. Nothing deletes a
// namespace's content here (no controller runs), so its Services,
// EndpointSlices and Pods are deleted when the test ends: they would stay
// in other tests' PTR records and zone transfers.
func (e *kubeEnv) namespace(prefix string) string {
	e.t.Helper()
	ns, err := e.kube.CoreV1().Namespaces().Create(e.ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create namespace: %v", err)
	}
	e.t.Cleanup(func() { e.emptyNamespace(ns.Name) })
	return ns.Name
}

// emptyNamespace deletes what the tests create in ns, and ns itself.
func (e *kubeEnv) emptyNamespace(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	core, all := e.kube.CoreV1(), metav1.ListOptions{}
	var errs []error
	svcs, err := core.Services(ns).List(ctx, all)
	errs = append(errs, err)
	if err == nil {
		for _, s := range svcs.Items {
			errs = append(errs, core.Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}))
		}
	}
	errs = append(errs,
		e.kube.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		core.Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	if err := errors.Join(errs...); err != nil {
		e.t.Logf("clean up namespace %s: %v", ns, err)
	}
}

// Names and records.

// svcName is the name of service svc in namespace ns under zone.
func svcName(svc, ns, zone string) string { return svc + "." + ns + ".svc." + zone }

// rrLine is a record with the plugins' default TTL, as a zone file line.
func rrLine(owner, rrtype, rdata string) string { return owner + " 5 IN " + rrtype + " " + rdata }

// addrLine is the A or AAAA record of ip.
func addrLine(owner, ip string) string {
	if strings.Contains(ip, ":") {
		return rrLine(owner, "AAAA", ip)
	}
	return rrLine(owner, "A", ip)
}

// addrType is the type of addrLine's record.
func addrType(ip string) uint16 {
	if strings.Contains(ip, ":") {
		return dns.TypeAAAA
	}
	return dns.TypeA
}

// soaLine is the SOA of zone as negative answers carry it, serial zeroed,
// for a plugin whose own zone (the one of its nameserver) is origin.
func soaLine(zone, origin string) string {
	return rrLine(zone, "SOA", "ns.dns."+origin+" hostmaster."+origin+" 0 7200 1800 86400 5")
}

// ptrName is the reverse name of ip.
func ptrName(t testing.TB, ip string) string {
	t.Helper()
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatalf("reverse of %q: %v", ip, err)
	}
	return name
}

// mixedCase upper-cases every other letter.
func mixedCase(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		if 'a' <= b[i] && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// Expected replies.

// wantReply is an expected reply. Records are zone file lines; each
// section is compared as a set unless ordered is set.
type wantReply struct {
	rcode                    int
	answer, authority, extra []string
	// ordered compares the Answer section in order (a CNAME and then its
	// target's records).
	ordered bool
}

func answer(rrs ...string) wantReply { return wantReply{answer: rrs} }

// withExtra is w with an Additional section.
func (w wantReply) withExtra(rrs ...string) wantReply { w.extra = rrs; return w }

// nxdomain is the negative answer for a name that does not exist, with
// the zone's SOA record soa.
func nxdomain(soa string) wantReply {
	return wantReply{rcode: dns.RcodeNameError, authority: []string{soa}}
}

// nodata is the negative answer for a name without records of the type.
func nodata(soa string) wantReply { return wantReply{authority: []string{soa}} }

// dnsCase is one query and its expected reply.
type dnsCase struct {
	name  string
	qtype uint16
	want  wantReply
}

// checkAll polls every case over network until its reply is exactly as
// wanted.
func checkAll(t *testing.T, s *server, network string, cases []dnsCase) {
	t.Helper()
	for _, c := range cases {
		expect(t, s, network, c.name, c.qtype, c.want, settleTimeout)
	}
}

// expect polls name/qtype over network until the reply is exactly want;
// on timeout the last difference is reported.
func expect(t *testing.T, s *server, network, name string, qtype uint16, want wantReply, within time.Duration) {
	t.Helper()
	var last string
	what := fmt.Sprintf("%s %s over %s", name, dns.TypeToString[qtype], network)
	eventually(diffReport{t, &last}, within, what, func() bool {
		last = replyDiff(s.exchange(t, network, name, qtype), name, want)
		return last == ""
	})
}

// diffReport makes a failed eventually() show the last difference.
type diffReport struct {
	*testing.T
	last *string
}

func (r diffReport) Fatalf(format string, args ...any) {
	r.T.Helper()
	r.T.Fatalf(format+"; the last reply differed:\n%s", append(args, *r.last)...)
}

// replyDiff describes how reply differs from want; "" when it does not.
func replyDiff(reply *dns.Msg, asked string, want wantReply) string {
	var b strings.Builder
	if reply.Rcode != want.rcode {
		fmt.Fprintf(&b, "rcode %s, want %s\n", dns.RcodeToString[reply.Rcode], dns.RcodeToString[want.rcode])
	}
	if !reply.Authoritative {
		b.WriteString("AA flag not set\n")
	}
	if reply.Truncated {
		b.WriteString("TC flag set\n")
	}
	if len(reply.Question) != 1 || reply.Question[0].Name != asked {
		fmt.Fprintf(&b, "question %v, want %s\n", reply.Question, asked)
	}
	sections := []struct {
		name    string
		got     []dns.RR
		want    []string
		inOrder bool
	}{
		{"answer", reply.Answer, want.answer, want.ordered},
		{"authority", reply.Ns, want.authority, false},
		{"additional", reply.Extra, want.extra, false},
	}
	for _, sec := range sections {
		got, exp := renderRRs(sec.got), parseRRs(sec.want)
		if !sec.inOrder {
			slices.Sort(got)
			slices.Sort(exp)
		}
		if !slices.Equal(got, exp) {
			fmt.Fprintf(&b, "%s section:\n  got:\n%s  want:\n%s", sec.name, indented(got), indented(exp))
		}
	}
	return b.String()
}

// renderRRs prints records, with the serial of SOA records zeroed: it is a
// timestamp.
func renderRRs(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		if soa, ok := rr.(*dns.SOA); ok {
			c := *soa
			c.Serial = 0
			rr = &c
		}
		out = append(out, rr.String())
	}
	return out
}

// parseRRs prints zone file lines the way dns.RR.String does.
func parseRRs(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		rr, err := dns.NewRR(l)
		if err != nil || rr == nil {
			out = append(out, fmt.Sprintf("<bad expected record %q: %v>", l, err))
			continue
		}
		out = append(out, rr.String())
	}
	return out
}

func indented(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// The zone as a whole.

// soaSerial is the current SOA serial of zone.
func soaSerial(t *testing.T, s *server, zone string) uint32 {
	t.Helper()
	r := s.exchange(t, "udp", zone, dns.TypeSOA)
	if len(r.Answer) != 1 {
		t.Fatalf("SOA query: want one record, got:\n%s", rrStrings(r.Answer))
	}
	return r.Answer[0].(*dns.SOA).Serial
}

// axfr transfers zone over TCP.
func axfr(s *server, zone string) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetAxfr(zone)
	ch, err := (&dns.Transfer{DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second}).In(m, s.TCP)
	if err != nil {
		return nil, err
	}
	var rrs []dns.RR
	for env := range ch {
		if env.Error != nil {
			return rrs, env.Error
		}
		rrs = append(rrs, env.RR...)
	}
	return rrs, nil
}

// axfrProblem says what is wrong with a transfer that must be framed by the
// SOA record soa (a zone file line) and hold the records must (as
// parseRRs prints them); "" when nothing.
func axfrProblem(rrs []dns.RR, err error, soa string, must []string) string {
	if err != nil {
		return err.Error()
	}
	if len(rrs) < 2 {
		return fmt.Sprintf("%d records", len(rrs))
	}
	got := renderRRs(rrs)
	first := parseRRs([]string{soa})[0]
	if got[0] != first || got[len(got)-1] != first {
		return "not framed by the SOA:\n" + indented(got)
	}
	for _, rr := range must {
		if !slices.Contains(got, rr) {
			return "missing " + rr + " in:\n" + indented(got)
		}
	}
	return ""
}

// Large answers.

// expectTruncatedOverUDP checks that the n-record answer of name A, asked
// over UDP without EDNS, is truncated: TC set, NOERROR, fewer records.
func expectTruncatedOverUDP(t *testing.T, s *server, name string, n int) {
	t.Helper()
	udp := s.exchange(t, "udp", name, dns.TypeA)
	if !udp.Truncated || len(udp.Answer) >= n || udp.Rcode != dns.RcodeSuccess {
		t.Errorf("A over UDP without EDNS: TC %v, rcode %s, %d records; want TC set, NOERROR, fewer than %d records",
			udp.Truncated, dns.RcodeToString[udp.Rcode], len(udp.Answer), n)
	}
}

// expectRotated asks name A over TCP ten times: every answer has all n
// records, and they do not all start with the same one.
func expectRotated(t *testing.T, s *server, name string, n int) {
	t.Helper()
	firsts := map[string]bool{}
	for range 10 {
		r := s.exchange(t, "tcp", name, dns.TypeA)
		if len(r.Answer) != n {
			t.Fatalf("A over TCP: %d records, want %d", len(r.Answer), n)
		}
		firsts[r.Answer[0].String()] = true
	}
	if len(firsts) < 2 {
		t.Errorf("10 answers all started with %v: want the records rotated", firsts)
	}
}

// exchangeEDNS queries over UDP with an EDNS0 buffer of size bytes.
func exchangeEDNS(s *server, name string, qtype, size uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(size, false)
	c := &dns.Client{Net: "udp", UDPSize: size, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, s.UDP)
	return r, err
}

func replySummary(m *dns.Msg, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("TC %v, %d records", m.Truncated, len(m.Answer))
}
