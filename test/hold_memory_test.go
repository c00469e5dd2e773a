package test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/childproc"
)

// The node-local cache's memory limit (deploy/components/node-local).
const nodeLocalMemoryLimit = 128 << 20

// memCgroup is a cgroup v1 memory controller group of the test's own.
type memCgroup string

// newMemCgroup makes a memory cgroup with limit bytes, removed when the test
// ends; the test is skipped when none can be made (not root, no cgroup v1).
func newMemCgroup(t *testing.T, limit int64) memCgroup {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("schemadns-hold-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("no memory cgroup of our own (needs root and cgroup v1 at /sys/fs/cgroup/memory): %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	g := memCgroup(dir)
	g.write(t, "memory.limit_in_bytes", limit)
	return g
}

func (g memCgroup) write(t *testing.T, file string, v int64) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(string(g), file), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (g memCgroup) read(t *testing.T, file string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(string(g), file))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// oomKills is the oom_kill count of memory.oom_control.
func (g memCgroup) oomKills(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(string(g), "memory.oom_control"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// holdStub answers every A query under pos. with an A record and every
// other query with NXDOMAIN, over TCP; close makes its port refuse.
type holdStub struct {
	srv  *dns.Server
	addr string
}

func startHoldStub(t *testing.T) *holdStub {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &holdStub{addr: l.Addr().String()}
	started := make(chan struct{})
	u.srv = &dns.Server{Listener: l, Handler: dns.HandlerFunc(holdStubAnswer), NotifyStartedFunc: func() { close(started) }}
	go u.srv.ActivateAndServe()
	<-started
	t.Cleanup(u.close)
	return u
}

func (u *holdStub) close() { u.srv.Shutdown() }

// holdStubAnswer gives node-local's cache the shape of a cluster's answers: an
// A record for a service, NXDOMAIN with the zone's SOA for the search
// paths a pod tries first.
func holdStubAnswer(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg).SetReply(r)
	q := r.Question[0]
	if strings.Contains(q.Name, ".pos.") {
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 3600}, A: net.IPv4(10, 96, 0, 1)}}
	} else {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: "test.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 3600},
			Ns: "ns.dns.cluster.local.", Mbox: "hostmaster.cluster.local.", Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: 30}}
	}
	w.WriteMsg(m)
}

// holdZones are the node-local Corefile's three blocks, each with a cache
// of its own, here under zones of the test.
var holdZones = []string{"a.test", "b.test", "c.test"}

// holdCorefile is node-local's three blocks (cache 30 with serve_stale,
// hold, forward over TCP) on port, forwarding to upstream.
func holdCorefile(port, metricsPort int, upstream string) string {
	var b strings.Builder
	for _, z := range holdZones {
		fmt.Fprintf(&b, "%s:%d {\n    bind 127.0.0.1\n    prometheus 127.0.0.1:%d\n", z, port, metricsPort)
		fmt.Fprintf(&b, "    cache 30 {\n        serve_stale 24h verify 500ms 0 5s\n    }\n    hold\n")
		fmt.Fprintf(&b, "    forward . %s {\n        force_tcp\n    }\n}\n", upstream)
	}
	return b.String()
}

// fillCaches asks every block for perBlock names that exist and perBlock
// that do not, with workers synchronous clients; it returns the answers
// that were not NOERROR or NXDOMAIN.
func fillCaches(t *testing.T, addr string, perBlock, workers int) int {
	t.Helper()
	names := make(chan string, workers)
	var bad sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	bad.Add(workers)
	for range workers {
		go func() {
			defer bad.Done()
			c := &dns.Client{Timeout: 3 * time.Second}
			conn, err := c.Dial(addr)
			if err != nil {
				t.Error(err)
				for range names {
				}
				return
			}
			defer conn.Close()
			for n := range names {
				r, _, err := c.ExchangeWithConn(new(dns.Msg).SetQuestion(n, dns.TypeA), conn)
				if err != nil || (r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError) {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		}()
	}
	for i := range perBlock {
		for _, z := range holdZones {
			names <- fmt.Sprintf("s%d.pos.%s.", i, z)
			names <- fmt.Sprintf("s%d.neg.%s.", i, z)
		}
	}
	close(names)
	bad.Wait()
	return failed
}

// burstResult is what the clients of a burst saw.
type burstResult struct {
	fast, held, other, lost int           // SERVFAIL within 1 s, SERVFAIL after 1.5 s or more, any other reply, no reply
	slowestFast             time.Duration // the slowest of the fast SERVFAILs
}

// burst sends n new names to addr over UDP from socks sockets, all of them
// within about a second, and waits for the replies (5 s at most).
func burst(t *testing.T, addr string, n, socks int) burstResult {
	t.Helper()
	var (
		mu  sync.Mutex
		res burstResult
		wg  sync.WaitGroup
	)
	per := n / socks
	for s := range socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent, got := burstSocket(t, addr, s, per)
			mu.Lock()
			defer mu.Unlock()
			for id, at := range sent {
				r, ok := got[id]
				switch {
				case !ok:
					res.lost++
				case r.rcode != dns.RcodeServerFailure:
					res.other++
				case r.at.Sub(at) < time.Second:
					res.fast++
					res.slowestFast = max(res.slowestFast, r.at.Sub(at))
				case r.at.Sub(at) >= 1500*time.Millisecond:
					res.held++
				default:
					res.other++
				}
			}
		}()
	}
	wg.Wait()
	return res
}

type burstReply struct {
	rcode int
	at    time.Time
}

// burstSocket sends per queries from one socket in batches of ten every
// 20 ms, and collects the replies by ID.
func burstSocket(t *testing.T, addr string, s, per int) (map[uint16]time.Time, map[uint16]burstReply) {
	sent, got := map[uint16]time.Time{}, map[uint16]burstReply{}
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Error(err)
		return sent, got
	}
	defer conn.Close()
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			m := new(dns.Msg)
			if m.Unpack(buf[:k]) != nil {
				continue
			}
			mu.Lock()
			got[m.Id] = burstReply{m.Rcode, time.Now()}
			full := len(got) == per
			mu.Unlock()
			if full {
				return
			}
		}
	}()
	for i := range per {
		if i > 0 && i%10 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		m := new(dns.Msg).SetQuestion(fmt.Sprintf("b%d-%d.pos.%s.", s, i, holdZones[i%len(holdZones)]), dns.TypeA)
		m.Id = uint16(i)
		b, _ := m.Pack()
		mu.Lock()
		sent[m.Id] = time.Now()
		mu.Unlock()
		conn.Write(b)
	}
	<-done
	return sent, got
}

func holdAsk(addr, name string) (*dns.Msg, error) {
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
	return r, err
}

// sampleHeld polls coredns_hold_held_queries every 100 ms until the
// returned stop is called, which returns the most it saw.
func sampleHeld(url string) (stop func() float64) {
	done, most := make(chan struct{}), make(chan float64, 1)
	go func() {
		m := 0.0
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				most <- m
				return
			case <-tick.C:
				if v, err := scrapeSum(url, "coredns_hold_held_queries{"); err == nil {
					m = max(m, v)
				}
			}
		}
	}()
	return func() float64 { close(done); return <-most }
}

// udpRcvbufErrors is the machine's count of UDP datagrams dropped for a
// full socket buffer (/proc/net/snmp), everyone's.
func udpRcvbufErrors(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "RcvbufErrors" && i < len(f) {
				v, _ := strconv.ParseInt(f[i], 10, 64)
				return v
			}
		}
	}
	return 0
}

// holdMetric sums the samples of a metric whose line starts with prefix.
func holdMetric(t *testing.T, url, prefix string) float64 {
	t.Helper()
	v, err := scrapeSum(url, prefix)
	if err != nil {
		t.Errorf("metrics: %v", err)
		return -1
	}
	return v
}

func scrapeSum(url, prefix string) (float64, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		sum += v
	}
	return sum, sc.Err()
}

// TestHoldMemoryInNodeLocalLimit runs the binary in a memory cgroup of
// node-local's 128 MiB with node-local's three blocks, fills their caches
// (cache 30: 9984 answers and 9984 denials each) from a stub upstream,
// makes the upstream refuse, and sends 20,000 new names within a second.
// The process is not OOM-killed and still answers afterwards: hold holds
// as many as its budget allows and fails the rest at once.
func TestHoldMemoryInNodeLocalLimit(t *testing.T) {
	const (
		perBlock = 12000 // above the cache's 9984 of each kind, so that each is full
		queries  = 20000
	)
	g := newMemCgroup(t, nodeLocalMemoryLimit)
	bin := coreDNSBinary(t)
	up := startHoldStub(t)
	ports, err := childproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])
	dir := t.TempDir()
	corefile := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(holdCorefile(ports[0], ports[1], up.addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" -conf "$3"`, "sh", string(g), bin, corefile)
	cmd.SysProcAttr = childproc.Attr()
	out := &coreDNSProcess{dnsAddr: addr}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		childproc.KillGroup(cmd.Process.Pid)
		<-exited
		if t.Failed() {
			t.Logf("log:\n%s", out.log())
		}
	})
	eventually(t, 30*time.Second, "the server answers", func() bool {
		r, err := holdAsk(addr, "ready.pos.a.test.")
		return err == nil && r.Response
	})

	fillStart := time.Now()
	if bad := fillCaches(t, addr, perBlock, 32); bad > 0 {
		t.Errorf("%d of %d queries filling the caches failed", bad, 6*perBlock)
	}
	entries := holdMetric(t, metricsURL, "coredns_cache_entries{")
	filled := g.read(t, "memory.usage_in_bytes")
	t.Logf("caches filled in %s: %.0f entries, %d MiB in use (peak %d MiB)", time.Since(fillStart).Round(time.Second), entries, filled>>20, g.read(t, "memory.max_usage_in_bytes")>>20)
	if entries < 6*9984*0.95 {
		t.Errorf("%.0f cache entries, want the three caches full (%d)", entries, 6*9984)
	}
	g.write(t, "memory.max_usage_in_bytes", 0)

	up.close()
	dropsBefore := udpRcvbufErrors(t)
	stopSampling := sampleHeld(metricsURL)
	res := burst(t, addr, queries, 40)
	most := stopSampling()
	peak := g.read(t, "memory.max_usage_in_bytes")
	rejected := holdMetric(t, metricsURL, "coredns_hold_rejected_total{")
	t.Logf("%d new names while the upstream refused: %d SERVFAIL at once (the slowest after %s), %d SERVFAIL after being held, %d other replies, %d unanswered "+
		"(the machine's UDP receive buffer errors meanwhile: %d); at most %.0f held at once (coredns_hold_held_queries every 100 ms); "+
		"peak %d MiB of %d MiB (%d MiB with the caches full); memory.failcnt %d; coredns_hold_rejected_total %.0f",
		queries, res.fast, res.slowestFast.Round(time.Millisecond), res.held, res.other, res.lost, udpRcvbufErrors(t)-dropsBefore, most,
		peak>>20, nodeLocalMemoryLimit>>20, filled>>20, g.read(t, "memory.failcnt"), rejected)

	select {
	case err := <-exited:
		exited <- err
		t.Fatalf("CoreDNS exited: %v (oom_kill %d)", err, g.oomKills(t))
	default:
	}
	if n := g.oomKills(t); n != 0 {
		t.Errorf("oom_kill %d in the cgroup, want 0", n)
	}
	// A name the cache holds is still answered (stale, or fresh within
	// the 30 s): the last one filled, which no later one can have evicted.
	r, err := holdAsk(addr, fmt.Sprintf("s%d.pos.c.test.", perBlock-1))
	if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.96.0.1" {
		t.Errorf("a cached name after the burst: %v, %v; want its A record 10.96.0.1", r, err)
	}
	if res.held+res.fast+res.other+res.lost != queries {
		t.Errorf("%d results for %d queries", res.held+res.fast+res.other+res.lost, queries)
	}
	// The burst comes within a second or so and a held query waits 2 s:
	// the queries that failed after being held were all held together.
	if most > 1000 || res.held > 1000 {
		t.Errorf("%.0f queries held at once, %d failed after being held; want at most the default max_held of 1000", most, res.held)
	}
}
