package gensearchpath

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/schemadns/schemadns/plugin/pkg/searchpath"
)

// clusterDNS is a real DNS server on loopback playing the cluster DNS with
// edns0autopath: it expands the option over fixed data and records what it
// was sent.
type clusterDNS struct {
	addr string
	code uint16
	tcp  *dns.Server

	mu   sync.Mutex
	got  []received
	data map[string][]dns.RR // name found → its records
}

// received is one query as the cluster DNS saw it.
type received struct {
	name, option, proto string
	do                  bool
}

func startClusterDNS(t *testing.T, code uint16) *clusterDNS {
	t.Helper()
	c := &clusterDNS{code: code, data: map[string][]dns.RR{
		"web.default.svc.cluster.local.":    {test.A("web.default.svc.cluster.local. 5 IN A 10.96.0.10")},
		"db.otherns.svc.cluster.local.":     {test.A("db.otherns.svc.cluster.local. 5 IN A 10.96.0.20")},
		"big.default.svc.cluster.local.":    bigAnswer(),
		"host.corp.example.net.":            {test.A("host.corp.example.net. 60 IN A 192.0.2.7")},
		"web.other-ns.svc.cluster.example.": {test.A("web.other-ns.svc.cluster.example. 5 IN A 10.0.0.1")},
	}}
	pc, l := listenUDPAndTCP(t)
	c.addr = pc.LocalAddr().String()
	c.tcp = &dns.Server{Listener: l, Handler: c}
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: c}, c.tcp} {
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
	return c
}

// restartTCP stops the TCP server, which closes every connection it has
// accepted, as a replica that exits does, and serves TCP on the same
// address again.
func (c *clusterDNS) restartTCP(t *testing.T) {
	t.Helper()
	if err := c.tcp.Shutdown(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: l, Handler: c}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
}

// listenUDPAndTCP opens UDP and TCP on one free loopback port. A port
// free for UDP may be taken for TCP, so it tries a few.
func listenUDPAndTCP(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	for i := 0; ; i++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l
		}
		pc.Close()
		if i == 20 {
			t.Fatal(err)
		}
	}
}

// bigAnswer does not fit 1232 octets: the reply is truncated over UDP.
func bigAnswer() []dns.RR {
	var rrs []dns.RR
	for i := 0; i < 100; i++ {
		rrs = append(rrs, test.A(fmt.Sprintf("big.default.svc.cluster.local. 5 IN A 10.1.%d.%d", i/250, i%250+1)))
	}
	return rrs
}

func (c *clusterDNS) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	q := r.Question[0]
	value, _, _ := searchpath.Find(r, c.code)
	rec := received{name: q.Name, option: string(value), proto: w.RemoteAddr().Network()}
	if o := r.IsEdns0(); o != nil {
		rec.do = o.Do()
	}
	c.mu.Lock()
	c.got = append(c.got, rec)
	c.mu.Unlock()

	m := new(dns.Msg)
	m.SetReply(r)
	m.SetEdns0(1232, false)
	if o := m.IsEdns0(); value != nil {
		// Misbehave: echo the option, which must not reach the client.
		o.Option = append(o.Option, &dns.EDNS0_LOCAL{Code: c.code, Data: value})
	}
	switch {
	case q.Qtype == dns.TypeNS: // health check
	case strings.EqualFold(q.Name, "broken."):
		m.Rcode = dns.RcodeServerFailure
	case strings.EqualFold(q.Name, "rejected."):
		m.Rcode = dns.RcodeFormatError
	default:
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{test.SOA("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5")}
		paths, _ := searchpath.Parse(value, 0)
		for _, p := range paths {
			name, _ := searchpath.Join(q.Name, p)
			if rrs, ok := c.data[strings.ToLower(name)]; ok {
				m.Rcode, m.Ns = dns.RcodeSuccess, nil
				m.Answer = append([]dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 5},
					Target: strings.ToLower(name)}}, rrs...)
				break
			}
		}
	}
	if w.RemoteAddr().Network() == "udp" {
		m.Truncate(1232)
	}
	w.WriteMsg(m)
}

func (c *clusterDNS) received() []received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// nextChain stands for the rest of the node-local chain (forward to the
// host's resolvers): it knows www.example.com.
type nextChain struct {
	mu    sync.Mutex
	asked []string
}

func (n *nextChain) Name() string { return "next" }

func (n *nextChain) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	n.mu.Lock()
	n.asked = append(n.asked, r.Question[0].Name)
	n.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	switch strings.ToLower(r.Question[0].Name) {
	case "www.example.com.":
		m.Answer = []dns.RR{test.A("www.example.com. 30 IN A 203.0.113.10")}
	case "down.example.com.":
		return dns.RcodeServerFailure, errors.New("upstream down")
	default:
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{test.SOA(". 300 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400")}
	}
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// newTestPlugin starts gensearchpath from a stanza body (the upstream
// address is %s), with nextChain after it.
func newTestPlugin(t *testing.T, corefile string, addrs ...any) (*Gensearchpath, *nextChain) {
	t.Helper()
	g, err := parseStanza(caddy.NewTestController("dns", fmt.Sprintf(corefile, addrs...)))
	if err != nil {
		t.Fatal(err)
	}
	next := &nextChain{}
	g.Next = next
	g.start()
	t.Cleanup(func() { g.stop() })
	return g, next
}

const (
	stanza = `gensearchpath ap.k8s.io cluster.local v1 {
    forward %s
    search corp.example.net example.net
    fallthrough
}`
	search    = ".search.default.cluster.local.ap.k8s.io."
	v1Default = "default.svc.cluster.local,svc.cluster.local,cluster.local,corp.example.net,example.net"
)

type handlerCase struct {
	test.Case
	sent     []received // what the cluster DNS must have seen
	nextSaw  []string   // what the rest of the chain must have seen
	noFall   bool       // without fallthrough
	clientDo bool
}

var handlerCases = []handlerCase{
	{ // A service of the pod's namespace.
		Case: test.Case{Qname: "web" + search, Qtype: dns.TypeA, Answer: []dns.RR{
			test.CNAME("web" + search + " 5 IN CNAME web.default.svc.cluster.local."),
			test.A("web.default.svc.cluster.local. 5 IN A 10.96.0.10"),
		}},
		sent: []received{{name: "web.", option: v1Default, proto: "udp"}},
	},
	{ // <svc>.<ns>, with the client's spelling kept and its DO bit passed on.
		Case: test.Case{Qname: "DB.otherns" + search, Qtype: dns.TypeA, Answer: []dns.RR{
			test.CNAME("DB.otherns" + search + " 5 IN CNAME db.otherns.svc.cluster.local."),
			test.A("db.otherns.svc.cluster.local. 5 IN A 10.96.0.20"),
		}},
		sent:     []received{{name: "DB.otherns.", option: v1Default, proto: "udp", do: true}},
		clientDo: true,
	},
	{ // A host-level search domain.
		Case: test.Case{Qname: "host" + search, Qtype: dns.TypeA, Answer: []dns.RR{
			test.CNAME("host" + search + " 5 IN CNAME host.corp.example.net."),
			test.A("host.corp.example.net. 60 IN A 192.0.2.7"),
		}},
		sent: []received{{name: "host.", option: v1Default, proto: "udp"}},
	},
	{ // An external name: NXDOMAIN everywhere in the cluster, then down the chain.
		Case: test.Case{Qname: "www.example.com" + search, Qtype: dns.TypeA, Answer: []dns.RR{
			test.CNAME("www.example.com" + search + " 30 IN CNAME www.example.com."),
			test.A("www.example.com. 30 IN A 203.0.113.10"),
		}},
		sent:    []received{{name: "www.example.com.", option: v1Default, proto: "udp"}},
		nextSaw: []string{"www.example.com."},
	},
	{ // Missing everywhere.
		Case: test.Case{Qname: "missing" + search, Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA(". 300 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400")}},
		sent:    []received{{name: "missing.", option: v1Default, proto: "udp"}},
		nextSaw: []string{"missing."},
	},
	{ // Without fallthrough, the cluster's NXDOMAIN is the answer.
		Case: test.Case{Qname: "www.example.com" + search, Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5")}},
		sent:   []received{{name: "www.example.com.", option: v1Default, proto: "udp"}},
		noFall: true,
	},
	{ // The cluster's SERVFAIL is the answer: no fallthrough.
		Case: test.Case{Qname: "broken" + search, Qtype: dns.TypeA, Rcode: dns.RcodeServerFailure},
		sent: []received{{name: "broken.", option: v1Default, proto: "udp"}},
	},
	{ // A reply too big for UDP is fetched again over TCP.
		Case: test.Case{Qname: "big" + search, Qtype: dns.TypeA, Answer: append([]dns.RR{
			test.CNAME("big" + search + " 5 IN CNAME big.default.svc.cluster.local."),
		}, bigAnswer()...)},
		sent: []received{{name: "big.", option: v1Default, proto: "udp"}, {name: "big.", option: v1Default, proto: "tcp"}},
	},
	{ // Names not in the search domain pass on untouched.
		Case:    test.Case{Qname: "www.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("www.example.com. 30 IN A 203.0.113.10")}},
		nextSaw: []string{"www.example.com."},
	},
	{ // Another cluster's search domain is not ours either.
		Case: test.Case{Qname: "web.search.default.cluster.example.ap.k8s.io.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError,
			Ns: []dns.RR{test.SOA(". 300 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400")}},
		nextSaw: []string{"web.search.default.cluster.example.ap.k8s.io."},
	},
}

// TestGensearchpathForceTCP: with force_tcp every query to the cluster
// DNS goes over TCP, the first try included.
func TestGensearchpathForceTCP(t *testing.T) {
	up := startClusterDNS(t, searchpath.DefaultCode)
	g, _ := newTestPlugin(t, strings.Replace(stanza, "    fallthrough\n", "    fallthrough\n    force_tcp\n", 1), up.addr)
	for _, name := range []string{"web", "big"} {
		m := new(dns.Msg).SetQuestion(name+search, dns.TypeA)
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		if rcode, err := g.ServeDNS(context.Background(), w, m); err != nil || w.Msg == nil || w.Msg.Rcode != dns.RcodeSuccess || len(w.Msg.Answer) < 2 {
			t.Fatalf("%s: rcode %d, %v, reply %v", name, rcode, err, w.Msg)
		}
	}
	want := []received{{name: "web.", option: v1Default, proto: "tcp"}, {name: "big.", option: v1Default, proto: "tcp"}}
	if got := up.received(); !slices.Equal(got, want) {
		t.Errorf("the cluster DNS got\n%+v\nwant\n%+v", got, want)
	}
}

// TestGensearchpathClosedPool: a cluster DNS that exits closes every
// connection gensearchpath keeps to it; the next query goes through all
// of them, more than connectTries, to a fresh one and is answered.
func TestGensearchpathClosedPool(t *testing.T) {
	up := startClusterDNS(t, searchpath.DefaultCode)
	g, _ := newTestPlugin(t, strings.Replace(stanza, "    fallthrough\n", "    fallthrough\n    force_tcp\n", 1), up.addr)
	ask := func() (*dns.Msg, error) {
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		_, err := g.ServeDNS(context.Background(), w, new(dns.Msg).SetQuestion("web"+search, dns.TypeA))
		return w.Msg, err
	}
	// Queries at once open a connection each, kept afterwards.
	var wg sync.WaitGroup
	for range 4 * connectTries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ask()
		}()
	}
	wg.Wait()
	up.restartTCP(t)
	if m, err := ask(); err != nil || m == nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 2 {
		t.Fatalf("after the cluster DNS closed its connections: %v, reply %v", err, m)
	}
}

func TestGensearchpathServeDNS(t *testing.T) {
	for _, tc := range handlerCases {
		t.Run(tc.Qname, func(t *testing.T) {
			up := startClusterDNS(t, searchpath.DefaultCode)
			body := stanza
			if tc.noFall {
				body = strings.Replace(stanza, "    fallthrough\n", "", 1)
			}
			g, next := newTestPlugin(t, body, up.addr)
			m := tc.Msg()
			if tc.clientDo {
				m.SetEdns0(4096, true)
			}
			w := dnstest.NewRecorder(&test.ResponseWriter{})
			rcode, err := g.ServeDNS(context.Background(), w, m)
			if got := up.received(); !slices.Equal(got, tc.sent) {
				t.Errorf("the cluster DNS got\n%+v\nwant\n%+v", got, tc.sent)
			}
			if !slices.Equal(next.asked, tc.nextSaw) {
				t.Errorf("the chain got %q, want %q", next.asked, tc.nextSaw)
			}
			if w.Msg == nil {
				t.Fatalf("no reply (rcode %d, %v)", rcode, err)
			}
			checkReply(t, w.Msg, m, tc.Case, tc.nextSaw != nil && tc.sent == nil)
		})
	}
}

// checkReply compares the reply with the case; a reply built by
// gensearchpath also answers the client's own question, has the CNAME first
// and no OPT record (the server adds the client's).
func checkReply(t *testing.T, got, query *dns.Msg, want test.Case, passed bool) {
	t.Helper()
	if got.Question[0] != query.Question[0] || got.Id != query.Id {
		t.Errorf("question %v id %d, want %v id %d", got.Question[0], got.Id, query.Question[0], query.Id)
	}
	if !passed {
		if len(got.Answer) > 0 && got.Answer[0].Header().Name != query.Question[0].Name {
			t.Errorf("the first answer is not owned by the question: %v", got.Answer[0])
		}
		if got.IsEdns0() != nil {
			t.Errorf("the reply carries an OPT record: %v", got.IsEdns0())
		}
	}
	if err := test.CNAMEOrder(got); err != nil {
		t.Error(err)
	}
	for _, sec := range []*[]dns.RR{&want.Answer, &want.Ns, &want.Extra} {
		*sec = slices.Clone(*sec)
		sort.Sort(test.RRSet(*sec))
	}
	if err := test.SortAndCheck(got, want); err != nil {
		t.Errorf("%v\n%v", err, got)
	}
}

func TestGensearchpathServeDNSErrors(t *testing.T) {
	up := startClusterDNS(t, searchpath.DefaultCode)
	g, next := newTestPlugin(t, stanza, up.addr)
	for name, want := range map[string]string{
		"rejected" + search:         "FORMERR", // about our query: SERVFAIL to the client, and an error
		"down.example.com" + search: "upstream down",
	} {
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		rcode, err := g.ServeDNS(context.Background(), w, new(dns.Msg).SetQuestion(name, dns.TypeA))
		if rcode != dns.RcodeServerFailure || err == nil || !strings.Contains(err.Error(), want) || w.Msg != nil {
			t.Errorf("%s: rcode %d, error %v, reply %v", name, rcode, err, w.Msg)
		}
	}
	if !slices.Equal(next.asked, []string{"down.example.com."}) {
		t.Errorf("the chain got %q", next.asked)
	}
}

// TestGensearchpathServeDNSOptionCodeAndNamespace: the configured code,
// and the namespace and cluster suffix of the name.
func TestGensearchpathServeDNSOptionCodeAndNamespace(t *testing.T) {
	up := startClusterDNS(t, 65001)
	g, _ := newTestPlugin(t, `gensearchpath ap.k8s.io. cluster.example v1 {
    forward %s
    option_code 65001
}`, up.addr)
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	g.ServeDNS(context.Background(), w, new(dns.Msg).SetQuestion("web.search.other-ns.cluster.example.ap.k8s.io.", dns.TypeA))
	want := []received{{name: "web.", option: "other-ns.svc.cluster.example,svc.cluster.example,cluster.example", proto: "udp"}}
	if got := up.received(); !slices.Equal(got, want) || w.Msg == nil || len(w.Msg.Answer) != 2 {
		t.Fatalf("got %+v, reply %v", got, w.Msg)
	}
}

// TestGensearchpathServeDNSLongNames: a host domain that would make a name
// over 255 octets is left out of the option, as a stub resolver skips it.
func TestGensearchpathServeDNSLongNames(t *testing.T) {
	up := startClusterDNS(t, searchpath.DefaultCode)
	long := strings.Repeat("h", 60) + "." + strings.Repeat("i", 60) // 121 octets
	g, _ := newTestPlugin(t, "gensearchpath ap.k8s.io cluster.local v1 {\n forward %s\n search %s\n}", up.addr, long)
	base := strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 50) + "." // 179 octets in wire form
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	g.ServeDNS(context.Background(), w, new(dns.Msg).SetQuestion(base+search[1:], dns.TypeA))
	want := []received{{name: base, option: "default.svc.cluster.local,svc.cluster.local,cluster.local", proto: "udp"}}
	if got := up.received(); !slices.Equal(got, want) || w.Msg == nil || w.Msg.Rcode != dns.RcodeNameError {
		t.Fatalf("got %+v, reply %v", got, w.Msg)
	}
}

func TestGensearchpathUpstreamFailover(t *testing.T) {
	up := startClusterDNS(t, searchpath.DefaultCode)
	dead := deadAddr(t)
	g, _ := newTestPlugin(t, "gensearchpath ap.k8s.io cluster.local v1 {\n forward %s %s\n}", dead, up.addr)
	for i := 0; i < 4; i++ { // round robin starts on each upstream in turn
		w := dnstest.NewRecorder(&test.ResponseWriter{})
		_, err := g.ServeDNS(context.Background(), w, new(dns.Msg).SetQuestion("web"+search, dns.TypeA))
		if err != nil || w.Msg == nil || len(w.Msg.Answer) != 2 {
			t.Fatalf("query %d with one upstream down: %v, %v", i, err, w.Msg)
		}
	}
	if !g.Ready() {
		t.Error("not ready with one upstream up")
	}
}

func TestGensearchpathReadyFollowsHealthChecks(t *testing.T) {
	g, _ := newTestPlugin(t, "gensearchpath ap.k8s.io cluster.local v1 {\n forward %s\n}", deadAddr(t))
	if !g.Ready() {
		t.Fatal("not ready before any failure")
	}
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	if rcode, err := g.ServeDNS(context.Background(), w, new(dns.Msg).SetQuestion("web"+search, dns.TypeA)); rcode != dns.RcodeServerFailure || err == nil {
		t.Fatalf("upstream down: rcode %d, %v", rcode, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("still ready 10s after the only upstream failed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deadAddr is a loopback UDP address nothing answers on: a port bound and
// released (ICMP port unreachable makes the failure fast).
func deadAddr(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

// TestGensearchpathMetrics: expansions by outcome, queries sent per
// expansion, fallthroughs.
func TestGensearchpathMetrics(t *testing.T) {
	up := startClusterDNS(t, searchpath.DefaultCode)
	g, _ := newTestPlugin(t, stanza, up.addr)
	read := func() [4]float64 {
		return [4]float64{
			metricValue(expansions.WithLabelValues("", outcomeFound)),
			metricValue(expansions.WithLabelValues("", outcomeNXDOMAIN)),
			metricValue(fallthroughs.WithLabelValues("")),
			metricValue(subqueries.WithLabelValues("").(prometheus.Metric)), // sum of queries sent
		}
	}
	before := read()
	for _, name := range []string{"web", "www.example.com", "missing", "big"} {
		g.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), new(dns.Msg).SetQuestion(name+search, dns.TypeA))
	}
	after := read()
	// found: web (1 query), www.example.com (1 + fallthrough), big (UDP + TCP);
	// nxdomain: missing (1 + fallthrough).
	want := [4]float64{3, 1, 2, 7}
	for i := range want {
		if after[i]-before[i] != want[i] {
			t.Errorf("metric %d went from %v to %v, want +%v", i, before[i], after[i], want[i])
		}
	}
}

// metricValue is a counter's value or a histogram's sum.
func metricValue(m prometheus.Metric) float64 {
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		panic(err)
	}
	if h := pb.GetHistogram(); h != nil {
		return h.GetSampleSum()
	}
	return pb.GetCounter().GetValue()
}
