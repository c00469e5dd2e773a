package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// Whole-server tests of what mesosschema exposes: its HTTP interface and
// log hold no secret, over any endpoint and any failure; a state over
// max_state_size leaves the last good one served; and 50 clients of
// /v1/enumerate at once on a 20,000-task state stay within a bounded heap.

// httpAnswer is one GET's status and body, whatever the status.
func httpAnswer(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// waitLog waits until the log holds s.
func waitLog(t *testing.T, logs *logCapture, s string) {
	t.Helper()
	eventually(t, 20*time.Second, "a log line with "+s, func() bool { return logs.count(s) > 0 })
}

// TestMesosNoSecrets: ZooKeeper's digest credentials in the zk URL and a
// basic auth secret read from a file appear in no answer of the HTTP
// interface and in no log line, through every endpoint and the failures a
// test can provoke: ZooKeeper unreachable, a redirect to an unknown host,
// the master down, and a Corefile refused at setup.
func TestMesosNoSecrets(t *testing.T) {
	const zkSecret, basicSecret = "zk-s3cret-pw", "basic-s3cret-pw"
	logs := captureLog(t)
	master, err := mesosmaster.Start(mesosmaster.Options{State: exampleMesosState(t), TLS: true, Principal: "dns", Secret: basicSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Close)
	credentials := filepath.Join(t.TempDir(), "credential")
	if err := os.WriteFile(credentials, []byte("dns "+basicSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	zk := fmt.Sprintf("zk://dns:%s@127.0.0.1:%d/mesos", zkSecret, freeLoopbackPort(t)) // nothing listens there
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	srv := startServer(t, mesosServer{zones: "mesos", options: []string{
		"zk " + zk, "zk_timeout 1s", "tls " + master.CAFile(), "basic_auth_file " + credentials,
		"http " + httpAddr, "refresh 1s", "state_timeout 2s",
	}}.corefile(master.Addr()))
	if r := query(t, srv.UDP, "leader.mesos.", dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("leader.mesos: %v", r)
	}

	var answers strings.Builder
	ask := func() {
		for _, path := range []string{"/v1/version", "/v1/config", "/v1/hosts/leader.mesos", "/v1/hosts/nothing.mesos",
			"/v1/hosts/leader.mesos/ports", "/v1/services/_leader._tcp.mesos", "/v1/enumerate", "/v1/nothing", "/"} {
			code, body := httpAnswer(t, "http://"+httpAddr+path)
			fmt.Fprintf(&answers, "%s %d %s\n", path, code, body)
		}
	}
	ask()
	if !strings.Contains(answers.String(), `"Zk":"zk://xxxxx@127.0.0.1`) || !strings.Contains(answers.String(), `"principal":"dns"`) {
		t.Errorf("/v1/config does not show the redacted zk URL and the principal:\n%s", answers.String())
	}

	// A redirect to a host that is no known master: refused, logged.
	stranger := startMesosMaster(t, exampleMesosState(t))
	master.SetLeader(stranger.Addr())
	waitLog(t, logs, "not a known master")
	ask()
	if stranger.Requests() != 0 {
		t.Errorf("the unknown host was asked %d times", stranger.Requests())
	}
	// The master down, after it came back.
	master.SetLeader("")
	waitLog(t, logs, "gives a good state again")
	if err := master.SetDown(true); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "connection refused")
	ask()
	// A Corefile with the credentials over plain http: refused at setup.
	err = startError(t, mesosServer{zones: "mesos", options: []string{"zk " + zk, "basic_auth dns " + basicSecret}}.corefile(master.Addr()))
	if err == nil || !strings.Contains(err.Error(), "insecure_credentials") {
		t.Errorf("basic auth over http: %v, want an error naming insecure_credentials", err)
	}
	errText := fmt.Sprint(err)

	for _, secret := range []string{zkSecret, basicSecret} {
		if n := logs.count(secret); n != 0 {
			t.Errorf("%q in %d log lines", secret, n)
		}
		if strings.Contains(answers.String(), secret) || strings.Contains(errText, secret) {
			t.Errorf("%q in an HTTP answer or the setup error", secret)
		}
	}
	if logs.count("ZooKeeper") == 0 {
		t.Error("ZooKeeper's outage was not logged: the test saw no log of it to check")
	}
}

// TestMesosStateSizeLimit: a state over max_state_size is refused with a
// clear error, and the last good state stays served.
func TestMesosStateSizeLimit(t *testing.T) {
	logs := captureLog(t)
	master := startMesosMaster(t, exampleMesosState(t))
	_, body := httpAnswer(t, master.URL()+"/master/state")
	limit := len(body) + 1024
	srv := startServer(t, mesosServer{zones: "mesos", options: []string{
		"refresh 1s", fmt.Sprintf("max_state_size %d", limit),
	}}.corefile(master.Addr()))
	name := "backup.metronome.mesos."
	if r := query(t, srv.UDP, name, dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("%s before: %v", name, r)
	}
	// A state without metronome, padded past the limit: refused, so
	// metronome's task keeps its record.
	st := exampleMesosState(t)
	for i, f := range st.Frameworks {
		if f.Name == "metronome" {
			st.Frameworks = append(st.Frameworks[:i], st.Frameworks[i+1:]...)
			break
		}
	}
	smaller := ownState(master, st)
	master.SetState(append(bytes.Clone(smaller), bytes.Repeat([]byte(" "), limit+1-len(smaller))...))
	waitLog(t, logs, "state body over the size limit")
	if r := query(t, srv.UDP, name, dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("%s after a state over the limit: %v, want the last good state's record", name, r)
	}
	// The same state within the limit is taken.
	master.SetState(smaller)
	eventually(t, 20*time.Second, name+" gone", func() bool {
		return query(t, srv.UDP, name, dns.TypeA).Rcode == dns.RcodeNameError
	})
}

// ownState is st as master serves it as its own (its SetStateOf), without
// serving it.
func ownState(master *mesosmaster.Master, st *mesosstate.State) []byte {
	ap := netip.MustParseAddrPort(master.Addr())
	host, port := ap.Addr().String(), int(ap.Port())
	own := *st
	own.Leader, own.PID, own.Hostname = master.PID(), master.PID(), host
	own.LeaderInfo = &mesosstate.MasterInfo{ID: "mesosmaster-" + master.Addr(), PID: master.PID(), Hostname: host, Port: port,
		Address: &mesosstate.Address{Hostname: host, IP: host, Port: port}}
	return mesosstatetest.Marshal(&own)
}

// enumeratePeakLimit is the heap that 50 clients of /v1/enumerate at
// once on the 20,000-task state may take above the idle server's (see
// docs/operations.md's "Mesos-DNS HTTP interface"): the answer built once
// (its records, then its 7 MB of JSON) and the connections' buffers.
const enumeratePeakLimit = 96 << 20

// heapObjects is the Go heap's object bytes: live objects and dead ones
// not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestMesosEnumerateMemory: 50 concurrent /v1/enumerate requests on a
// 20,000-task state (from the stand-in master, in this process) get the
// same whole answer, and the heap stays within enumeratePeakLimit above
// the idle server's. GOGC is 10 while it runs, so that the heap's object
// bytes stay within a tenth of the live bytes.
func TestMesosEnumerateMemory(t *testing.T) {
	shape := mesosstatetest.BenchShape
	shape.Tasks, shape.Frameworks, shape.Agents = 20000, 200, 1000
	master := startMesosMaster(t, mesosstatetest.Generate(shape))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	startServer(t, mesosServer{zones: "mesos", options: []string{"http " + httpAddr, "startup_timeout 30s"}}.corefile(master.Addr()))

	old := debug.SetGCPercent(10)
	defer debug.SetGCPercent(old)
	runtime.GC()
	base := heapObjects()
	var peak atomic.Uint64
	ctx, stop := context.WithCancel(context.Background())
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for ctx.Err() == nil {
			if h := heapObjects(); h > peak.Load() {
				peak.Store(h)
			}
			time.Sleep(200 * time.Microsecond)
		}
	})
	const clients = 50
	sizes := make([]int64, clients)
	codes := make([]int, clients)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + httpAddr + "/v1/enumerate")
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			codes[i] = resp.StatusCode
			sizes[i], _ = io.Copy(io.Discard, resp.Body)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	sampler.Wait()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for i := range clients {
		if codes[i] != http.StatusOK || sizes[i] != sizes[0] || sizes[0] < 1<<20 {
			t.Errorf("client %d: %d, %d bytes; want 200 and the %d bytes of the first", i, codes[i], sizes[i], sizes[0])
		}
	}
	above := peak.Load() - min(base, peak.Load())
	t.Logf("50 clients of /v1/enumerate (%d bytes each) in %s: heap objects peak %d MiB above the idle %d MiB; heap in use after GC %d MiB",
		sizes[0], elapsed.Round(time.Millisecond), above>>20, base>>20, ms.HeapInuse>>20)
	if above > enumeratePeakLimit {
		t.Errorf("peak %d MiB above the idle server, over the documented %d MiB", above>>20, enumeratePeakLimit>>20)
	}
}

// TestMesosNoSecretsIAM: with a DC/OS IAM service account, neither its
// private key nor a password in its login endpoint appears in an answer
// or a log line, through a refused login, a revoked token and the master
// down.
func TestMesosNoSecretsIAM(t *testing.T) {
	const endpointSecret = "iam-s3cret-pw"
	logs := captureLog(t)
	master, err := mesosmaster.Start(mesosmaster.Options{State: exampleMesosState(t), TLS: true, IAM: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	account, _ := json.Marshal(map[string]string{"uid": "dns-svc", "private_key": keyPEM,
		"login_endpoint": "https://dns:" + endpointSecret + "@" + master.Addr() + mesosmaster.LoginPath})
	file := filepath.Join(t.TempDir(), "iam.json")
	if err := os.WriteFile(file, account, 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	srv := startServer(t, mesosServer{zones: "mesos", options: []string{
		"tls " + master.CAFile(), "iam " + file, "http " + httpAddr, "refresh 1s", "state_timeout 2s", "startup_timeout 1s",
	}}.corefile(master.Addr()))
	// The account is not known yet: the login is refused, and logged.
	waitLog(t, logs, "IAM login failed")
	if err := master.AddServiceAccount("dns-svc", &key.PublicKey); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "leader.mesos answered", func() bool {
		return len(query(t, srv.UDP, "leader.mesos.", dns.TypeA).Answer) == 1
	})
	var answers strings.Builder
	for _, path := range []string{"/v1/config", "/v1/enumerate"} {
		_, body := httpAnswer(t, "http://"+httpAddr+path)
		answers.WriteString(body)
	}
	master.RevokeTokens()
	eventually(t, 20*time.Second, "a second login", func() bool { return master.Logins() >= 2 })
	if err := master.SetDown(true); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "connection refused")
	// A line of the key's base64, and the endpoint's password.
	keyLine := strings.Split(keyPEM, "\n")[2]
	for _, secret := range []string{endpointSecret, keyLine} {
		if n := logs.count(secret); n != 0 || strings.Contains(answers.String(), secret) {
			t.Errorf("%q in %d log lines or in an answer", secret, n)
		}
	}
	if !strings.Contains(answers.String(), `"IAMConfigFile":"`+file+`"`) {
		t.Errorf("/v1/config does not name the IAM file: %s", answers.String())
	}
}
