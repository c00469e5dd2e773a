package test

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/childproc"
)

// The node-local cache of deploy/ through an outage of the whole cluster
// DNS: every replica killed at once, so that its address refuses (kube-proxy
// rejects a Service without ready endpoints; on loopback the kernel refuses
// a dead port, by ICMP port unreachable over UDP and by RST over TCP).

// outageBlocks are the node-local server blocks, each with the name a query
// for base takes there and the name whose A record answers it.
var outageBlocks = []struct {
	qname, rec func(base string) string
}{
	// ap.k8s.io: gensearchpath to the cluster DNS (force_tcp).
	{
		func(b string) string { return b + ".search.default.cluster.local.ap.k8s.io." },
		func(b string) string { return b + ".default.svc.cluster.local." }},
	// cluster.local: forward to the cluster DNS with force_tcp.
	{
		func(b string) string { return b + ".default.svc.cluster.local." },
		func(b string) string { return b + ".default.svc.cluster.local." }},
	// ".": forward to the node's resolvers (here the same server) over UDP.
	{
		func(b string) string { return b + ".example.com." },
		func(b string) string { return b + ".example.com." }},
}

// outageZone is the root zone the stand-in cluster DNS serves: an A record,
// TTL 5 (kubeschema's), for each name a base finds in a block.
func outageZone(bases ...string) (zone string, addr map[string]string) {
	var b strings.Builder
	b.WriteString(". 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5\n")
	b.WriteString(". 5 IN NS ns.dns.cluster.local.\n")
	addr = map[string]string{}
	for i, base := range bases {
		for j, bl := range outageBlocks {
			name := bl.rec(base)
			if addr[name] != "" {
				continue // the ap.k8s.io and cluster.local blocks find the same names
			}
			addr[name] = fmt.Sprintf("10.96.%d.%d", 10+j, 1+i)
			fmt.Fprintf(&b, "%s 5 IN A %s\n", name, addr[name])
		}
	}
	return b.String(), addr
}

// outageReply is a reply through the node-local cache and how long it took.
type outageReply struct {
	m    *dns.Msg
	took time.Duration
	err  error
}

func outageAsk(addr, proto, qname string) outageReply {
	m := new(dns.Msg).SetQuestion(qname, dns.TypeA)
	start := time.Now()
	r, _, err := (&dns.Client{Net: proto, Timeout: 5 * time.Second}).Exchange(m, addr)
	return outageReply{r, time.Since(start), err}
}

// wantAnswer is the exact answer to qname for the record rec at ip with
// TTL ttl: the A record, behind a CNAME from qname where the two differ.
func wantAnswer(qname, rec, ip string, ttl int) string {
	var b strings.Builder
	if qname != rec {
		fmt.Fprintf(&b, "%s\t%d\tIN\tCNAME\t%s\n", qname, ttl, rec)
	}
	fmt.Fprintf(&b, "%s\t%d\tIN\tA\t%s\n", rec, ttl, ip)
	return b.String()
}

// checkReply fails the test unless r is rcode with exactly answer.
func checkReply(t *testing.T, what string, r outageReply, rcode int, answer string) {
	t.Helper()
	switch {
	case r.err != nil:
		t.Errorf("%s: %v after %s", what, r.err, r.took)
	case r.m.Rcode != rcode || rrStrings(r.m.Answer) != answer:
		t.Errorf("%s: %s after %s with\n%swant %s with\n%s", what, dns.RcodeToString[r.m.Rcode], r.took,
			rrStrings(r.m.Answer), dns.RcodeToString[rcode], answer)
	}
}

// TestDeployNodeLocalOutage runs the node-local Corefile of deploy/ (its
// addresses moved to loopback, as TestDeployNodeLocalAutopath does) in
// front of a stand-in cluster DNS, the binary serving a zone file with
// edns0autopath, which it SIGKILLs and later starts again. Through each of
// the three blocks, over UDP and TCP from the client:
//   - a new name asked during the outage fails with SERVFAIL after hold's
//     3 s, not at once and not after the client's timeout;
//   - a name asked before the kill, its cache entry expired, is answered
//     stale (TTL 0) for as long as the outage lasts, each reply in under 1 s;
//   - a new name asked while the cluster DNS is down is answered once it is
//     back, 0.8 s later plus its start-up;
//   - after the outage the stale names are answered fresh again.
func TestDeployNodeLocalOutage(t *testing.T) {
	e := startOutageEnv(t)
	// Names the cache holds: asked once each, fresh from the cluster DNS.
	for _, bl := range outageBlocks {
		q, rec := bl.qname("web"), bl.rec("web")
		checkReply(t, "before the outage, "+q, outageAsk(e.node, "udp", q), dns.RcodeSuccess, wantAnswer(q, rec, e.addrs[rec], 5))
	}
	warmed := time.Now()
	e.clusterDNS.Kill()
	killed := time.Now()
	if t.Failed() {
		return
	}
	failMax := e.newNamesFail(t)
	// The names asked before are past their 5 s in the cache.
	time.Sleep(time.Until(warmed.Add(6 * time.Second)))
	staleN, staleMax := e.servesStale(t, 4*time.Second)
	if t.Failed() {
		return
	}
	back := e.answersWhenBack(t, 800*time.Millisecond)
	// The stale names are fresh again once the failed refresh's recheck
	// (5 s) has passed.
	for _, bl := range outageBlocks {
		q := bl.qname("web")
		eventually(t, 15*time.Second, q+" fresh again", func() bool {
			r := outageAsk(e.node, "udp", q)
			return r.err == nil && len(r.m.Answer) > 0 && r.m.Answer[0].Header().Ttl > 0
		})
	}
	refreshed := time.Since(back.up)

	held := holdCounts(t, e.metrics)
	if held["answered"] < 6 || held["failed"] < 6 {
		t.Errorf("coredns_hold_duration_seconds_count by outcome: %v, want 6 answered and at least 6 failed", held)
	}
	t.Logf("outage of %s: %d stale answers (TTL 0) in 4 s, the slowest %s; new names failed after at most %s; "+
		"new names asked %s before the cluster DNS was back answered after at most %s, the last %s after it was back; "+
		"stale names fresh again %s after; held queries by outcome %v",
		ms(back.up.Sub(killed)), staleN, ms(staleMax), ms(failMax),
		ms(back.up.Sub(back.asked)), ms(back.slowest), ms(back.last.Sub(back.up)), ms(refreshed), held)
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// outageEnv is the node-local cache and the stand-in cluster DNS it
// forwards to.
type outageEnv struct {
	bin, clusterCF string
	node, cluster  string            // the DNS addresses (host:53)
	metrics        string            // the node-local cache's /metrics
	addrs          map[string]string // the zone's A records
	clusterLog     *coreDNSProcess
	clusterDNS     *childproc.Process
}

// startOutageEnv writes the stand-in cluster DNS's zone and Corefile and
// starts it and the node-local cache, each on port 53 of a loopback
// address of its own; the node's resolv.conf names the cluster DNS too.
func startOutageEnv(t *testing.T) *outageEnv {
	t.Helper()
	e := &outageEnv{bin: coreDNSBinary(t), clusterLog: &coreDNSProcess{}}
	nodeIP, clusterIP := freeLoopback53(t), freeLoopback53(t)
	for clusterIP == nodeIP {
		clusterIP = freeLoopback53(t)
	}
	e.node, e.cluster = nodeIP+":53", clusterIP+":53"
	dir := t.TempDir()
	var zone string
	zone, e.addrs = outageZone("web", "back-udp", "back-tcp")
	zonePath, resolvPath := filepath.Join(dir, "db.root"), filepath.Join(dir, "resolv.conf")
	e.clusterCF = filepath.Join(dir, "Corefile.cluster")
	for path, content := range map[string]string{
		zonePath:    zone,
		resolvPath:  "nameserver " + clusterIP + "\n",
		e.clusterCF: fmt.Sprintf(".:53 {\n    bind %s\n    edns0autopath\n    file %s .\n}\n", clusterIP, zonePath),
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.startCluster(t)
	t.Cleanup(func() {
		e.clusterDNS.Kill()
		if t.Failed() {
			t.Logf("cluster DNS log:\n%s", e.clusterLog.log())
		}
	})

	raw, err := os.ReadFile(filepath.Join("..", "deploy", "components", "node-local", "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	e.metrics = "http://" + metrics + "/metrics"
	nodeCF := nodeLocalOnLoopback(t, string(raw), nodeLocalAddrs{node: nodeIP, cluster: clusterIP,
		resolvers: clusterIP, resolvConf: resolvPath, metrics: metrics})
	if n := strings.Count(nodeCF, "\n    hold\n"); n != len(outageBlocks) {
		t.Fatalf("the node-local Corefile holds in %d blocks, want every one:\n%s", n, nodeCF)
	}
	runCorefile(t, e.bin, nodeCF, &coreDNSProcess{})
	eventually(t, 30*time.Second, "the cluster DNS answers", e.clusterUp)
	eventually(t, 30*time.Second, "the node-local cache answers", func() bool {
		r := outageAsk(e.node, "udp", "ready.example.com.")
		return r.err == nil && r.m.Response
	})
	return e
}

// startCluster starts the stand-in cluster DNS (again).
func (e *outageEnv) startCluster(t *testing.T) {
	t.Helper()
	p, err := childproc.Start("cluster-dns", e.bin, []string{"-conf", e.clusterCF}, childproc.NewSink(e.clusterLog))
	if err != nil {
		t.Fatal(err)
	}
	e.clusterDNS = p
}

// clusterUp reports whether the stand-in cluster DNS answers.
func (e *outageEnv) clusterUp() bool {
	m := new(dns.Msg).SetQuestion("ns.dns.cluster.local.", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 200 * time.Millisecond}).Exchange(m, e.cluster)
	return err == nil && r.Response
}

// everywhere runs ask for every block and client protocol at once, and
// returns the longest a reply took.
func everywhere(ask func(qname func(string) string, rec func(string) string, proto string) outageReply) time.Duration {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for _, bl := range outageBlocks {
		for _, proto := range []string{"udp", "tcp"} {
			wg.Go(func() {
				r := ask(bl.qname, bl.rec, proto)
				mu.Lock()
				slowest = max(slowest, r.took)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return slowest
}

// newNamesFail asks for names the cache has never seen, with the cluster
// DNS down: each is held for the window, then fails with SERVFAIL.
func (e *outageEnv) newNamesFail(t *testing.T) time.Duration {
	return everywhere(func(qname, _ func(string) string, proto string) outageReply {
		q := qname("gone-" + proto)
		r := outageAsk(e.node, proto, q)
		checkReply(t, "during the outage, new "+q+" over "+proto, r, dns.RcodeServerFailure, "")
		if r.took < 2900*time.Millisecond || r.took > 4*time.Second {
			t.Errorf("during the outage, new %s over %s: failed after %s, want after hold's 3 s", q, proto, r.took)
		}
		return r
	})
}

// servesStale asks for the names asked before the outage, their cache
// entries expired, every 250 ms for d: each is answered stale, with TTL 0,
// in under a second. It returns the number of answers and the slowest.
func (e *outageEnv) servesStale(t *testing.T, d time.Duration) (int, time.Duration) {
	n, slowest := 0, time.Duration(0)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, bl := range outageBlocks {
			for _, proto := range []string{"udp", "tcp"} {
				q, rec := bl.qname("web"), bl.rec("web")
				r := outageAsk(e.node, proto, q)
				checkReply(t, "stale "+q+" over "+proto, r, dns.RcodeSuccess, wantAnswer(q, rec, e.addrs[rec], 0))
				if r.took >= time.Second {
					t.Errorf("stale %s over %s took %s", q, proto, r.took)
				}
				n++
				slowest = max(slowest, r.took)
			}
		}
	}
	return n, slowest
}

// comeback is when held queries were asked, when the cluster DNS answered
// again, when the last held query was answered, and the longest one held.
type comeback struct {
	asked, up, last time.Time
	slowest         time.Duration
}

// answersWhenBack asks for new names with the cluster DNS down, starts it
// again after restart, and checks that each held query is answered.
func (e *outageEnv) answersWhenBack(t *testing.T, restart time.Duration) comeback {
	c := comeback{asked: time.Now()}
	done := make(chan time.Duration)
	go func() {
		done <- everywhere(func(qname, rec func(string) string, proto string) outageReply {
			q, name := qname("back-"+proto), rec("back-"+proto)
			r := outageAsk(e.node, proto, q)
			checkReply(t, "new "+q+" over "+proto+", the cluster DNS back", r, dns.RcodeSuccess, wantAnswer(q, name, e.addrs[name], 5))
			return r
		})
	}()
	time.Sleep(restart)
	e.startCluster(t)
	for !e.clusterUp() && time.Since(c.asked) < 5*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	c.up = time.Now()
	c.slowest = <-done
	c.last = c.asked.Add(c.slowest)
	return c
}

// holdCounts is coredns_hold_duration_seconds_count summed by outcome.
func holdCounts(t *testing.T, url string) map[string]int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "coredns_hold_duration_seconds_count{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `outcome="`)
		outcome, _, _ := strings.Cut(rest, `"`)
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out[outcome] += int(n)
	}
	return out
}
