package mesosschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// get asks the HTTP interface of m for path and returns the status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if ct := rec.Header().Get("Content-Type"); rec.Code == http.StatusOK && ct != "application/json" {
		t.Errorf("%s: Content-Type %q", path, ct)
	}
	return rec.Code, rec.Body.String()
}

// exampleServer serves examples/mesos/state.json, with the state kept for
// /v1/enumerate.
func exampleServer(t *testing.T) *Mesosschema {
	t.Helper()
	body, err := os.ReadFile("../../examples/mesos/state.json")
	if err != nil {
		t.Fatal(err)
	}
	st, err := mesosstate.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	m := testServer(t, st, "10.0.0.11:5050")
	m.poller = newPoller(m, nil)
	m.poller.state.Store(st)
	m.httpAddr = "127.0.0.1:8123"
	return m
}

// TestHTTPHostsAndServices: /v1/hosts and /v1/services answer as Mesos-DNS
// does, in its JSON shapes, in any case, with or without the final dot,
// and with one empty entry for a name without records.
func TestHTTPHostsAndServices(t *testing.T) {
	h := exampleServer(t).routes()
	for _, tc := range []struct {
		path string
		want any
	}{
		{"/v1/hosts/Search.Marathon.mesos", []hostRecord{{"search.marathon.mesos.", "10.0.1.21"}, {"search.marathon.mesos.", "10.0.1.22"}}},
		{"/v1/hosts/apiserver-myservice.marathon.mesos.", []hostRecord{{"apiserver-myservice.marathon.mesos.", "10.0.1.23"}, {"apiserver-myservice.marathon.mesos.", "2001:db8:1::23"}}},
		{"/v1/hosts/nothing.mesos", []hostRecord{{}}},
		{"/v1/hosts/example.org", []hostRecord{{}}},
		{"/v1/services/_web._tcp.marathon.mesos", []serviceRecord{
			{"_web._tcp.marathon.mesos", "web-grm4c-s2.marathon.mesos.", "172.17.0.3", "31401"},
			{"_web._tcp.marathon.mesos", "web-grm4c-s2.marathon.mesos.", "172.17.0.3", "31402"},
			{"_web._tcp.marathon.mesos", "web-kbrou-s1.marathon.mesos.", "172.17.0.2", "31301"},
			{"_web._tcp.marathon.mesos", "web-kbrou-s1.marathon.mesos.", "172.17.0.2", "31302"}}},
		{"/v1/services/_nothing._tcp.marathon.mesos.", []serviceRecord{{}}},
	} {
		code, body := get(t, h, tc.path)
		want, _ := json.Marshal(tc.want)
		if code != http.StatusOK || strings.TrimSpace(body) != string(want) {
			t.Errorf("%s: %d %s\nwant %s", tc.path, code, body, want)
		}
	}
	if code, _ := get(t, h, "/v1/hosts/x.mesos/ports"); code != http.StatusNotImplemented {
		t.Errorf("/v1/hosts/x/ports: %d, want 501 as Mesos-DNS", code)
	}
	if code, _ := get(t, h, "/v1/nothing"); code != http.StatusNotFound {
		t.Errorf("/v1/nothing: %d", code)
	}
}

// TestHTTPEnumerate: every framework, with each running task and the
// records it makes; tasks not running are listed in no framework.
func TestHTTPEnumerate(t *testing.T) {
	m := exampleServer(t)
	_, body := get(t, m.routes(), "/v1/enumerate")
	var got struct {
		Frameworks []struct {
			Name  string `json:"name"`
			Tasks []struct {
				Name    string `json:"name"`
				ID      string `json:"id"`
				Records []struct{ Name, Host, Rtype string }
			} `json:"tasks"`
		} `json:"frameworks"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var frameworks, tasks []string
	records := map[string][]string{}
	for _, f := range got.Frameworks {
		frameworks = append(frameworks, f.Name)
		for _, task := range f.Tasks {
			tasks = append(tasks, f.Name+"/"+task.Name)
			for _, r := range task.Records {
				records[task.ID] = append(records[task.ID], r.Rtype+" "+r.Name+" "+r.Host)
			}
		}
	}
	slices.Sort(tasks)
	if want := []string{"My Framework", "marathon", "marathon.prod", "metronome"}; !slices.Equal(sortedCopy(frameworks), want) {
		t.Errorf("frameworks %v, want %v", frameworks, want)
	}
	want := []string{"My Framework/Worker_1", "marathon.prod/apiserver.myservice", "marathon/apiserver.myservice",
		"marathon/search", "marathon/search", "marathon/search", "marathon/web", "marathon/web", "metronome/backup"}
	if !slices.Equal(tasks, want) {
		t.Errorf("tasks\n%v\nwant\n%v", tasks, want)
	}
	for id, recs := range records {
		if strings.HasPrefix(id, "backup") {
			slices.Sort(recs)
			want := []string{"A backup-7rotk-s0.metronome.mesos. 10.0.1.21", "A backup-7rotk-s0.metronome.slave.mesos. 10.0.1.21",
				"A backup.metronome.mesos. 10.0.1.21", "A backup.metronome.slave.mesos. 10.0.1.21"}
			if !slices.Equal(recs, want) {
				t.Errorf("backup's records\n%v\nwant\n%v", recs, want)
			}
		}
	}
}

func sortedCopy(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }

// TestHTTPVersionAndConfig: the version names the Mesos-DNS API; the
// configuration uses Mesos-DNS's field names and never shows a secret.
func TestHTTPVersionAndConfig(t *testing.T) {
	m := exampleServer(t)
	if _, body := get(t, m.routes(), "/v1/version"); !strings.Contains(body, `"Service":"Mesos-DNS"`) || !strings.Contains(body, `"Version":`) {
		t.Errorf("/v1/version: %s", body)
	}
	m.master.Auth.Basic = nil
	m.master.ZK = "zk://10.0.0.1:2181/mesos"
	_, body := get(t, m.routes(), "/v1/config")
	var c map[string]any
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"RefreshSeconds": 60.0, "TTL": 60.0, "Domain": "mesos", "SOAMname": "ns1.mesos.",
		"SOARname": "root.ns1.mesos.", "Zk": "zk://10.0.0.1:2181/mesos", "HttpPort": 8123.0, "HTTPListener": "127.0.0.1", "HttpOn": true} {
		if c[key] != want {
			t.Errorf("/v1/config %s = %v, want %v", key, c[key], want)
		}
	}
	m.master.Auth.Basic = &mesosmaster.BasicAuth{Principal: "dns", Secret: "s3cret"}
	if _, body := get(t, m.routes(), "/v1/config"); strings.Contains(body, "s3cret") || !strings.Contains(body, `"principal":"dns"`) {
		t.Errorf("/v1/config shows the secret or not the principal: %s", body)
	}
}

// TestHTTPListenerSharedAcrossReload: an instance of the next Corefile on
// the same address (a reload starts it before stopping the first) takes
// the listener over; another server block of the same Corefile cannot;
// the listener closes with its last holder.
func TestHTTPListenerSharedAcrossReload(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	say := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) })
	}
	fetch := func() string {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			return "error: " + err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	oldCorefile, newCorefile := new(int), new(int)
	old, err := listenHTTP(addr, say("old"), oldCorefile)
	if err != nil {
		t.Fatal(err)
	}
	if got := fetch(); got != "old" {
		t.Fatalf("first instance: %q", got)
	}
	if _, err := listenHTTP(addr, say("other block"), oldCorefile); !errors.Is(err, errHTTPTaken) {
		t.Errorf("a second server block of one Corefile on the same address: %v, want %v", err, errHTTPTaken)
	}
	next, err := listenHTTP(addr, say("new"), newCorefile)
	if err != nil {
		t.Fatalf("the next Corefile's instance on the same address: %v", err)
	}
	old.release()
	if got := fetch(); got != "new" {
		t.Errorf("after the reload: %q, want the new instance", got)
	}
	next.release()
	if got := fetch(); !strings.HasPrefix(got, "error") {
		t.Errorf("after the last release: %q, want the listener closed", got)
	}
}

// TestHTTPConfigHidesSecrets: /v1/config shows neither the zk URL's
// password nor the basic auth secret, whatever characters they hold.
func TestHTTPConfigHidesSecrets(t *testing.T) {
	m := exampleServer(t)
	for _, zk := range []string{"zk://user:zk-s3cret@10.0.0.1:2181,10.0.0.2:2181/mesos", "zk://user:zk/s3cret@10.0.0.1:2181/mesos"} {
		m.master.ZK = zk
		m.master.Auth.Basic = &mesosmaster.BasicAuth{Principal: "dns", Secret: "basic-s3cret"}
		_, body := get(t, m.routes(), "/v1/config")
		if strings.Contains(body, "s3cret") || !strings.Contains(body, `"Zk":"zk://xxxxx@10.0.0.1:2181`) {
			t.Errorf("zk %s: /v1/config %s", zk, body)
		}
	}
}

// TestHTTPEnumerateCached: /v1/enumerate is encoded once per state and
// served with its Content-Length; a new state brings a new answer.
func TestHTTPEnumerateCached(t *testing.T) {
	m := exampleServer(t)
	h := m.routes()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/enumerate", nil))
	first := m.enum.Load()
	var cached bytes.Buffer
	if first != nil {
		_ = first.body.writeTo(&cached)
	}
	if first == nil || rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) || rec.Body.String() != cached.String() {
		t.Fatalf("first answer: Content-Length %q for %d bytes, cached %v", rec.Header().Get("Content-Length"), rec.Body.Len(), first != nil)
	}
	get(t, h, "/v1/enumerate")
	if m.enum.Load() != first {
		t.Error("the second request built the answer again")
	}
	// A state without the framework metronome: the next answer has none.
	st := *m.poller.state.Load()
	st.Frameworks = slices.DeleteFunc(slices.Clone(st.Frameworks), func(f mesosstate.Framework) bool { return f.Name == "metronome" })
	m.poller.state.Store(&st)
	m.poller.stateSeq.Add(1)
	if _, body := get(t, h, "/v1/enumerate"); strings.Contains(body, "metronome") || !strings.Contains(body, "marathon") {
		t.Errorf("after a new state: %s", body)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestHTTPServerLimits: the listener has every timeout set, and a client
// sending its headers a byte at a time (slowloris) is cut off once the
// header timeout passes.
func TestHTTPServerLimits(t *testing.T) {
	addr := freeAddr(t)
	h, err := listenHTTP(addr, exampleServer(t).routes(), new(int))
	if err != nil {
		t.Fatal(err)
	}
	defer h.release()
	httpServers.Lock()
	srv := httpServers.m[addr].srv
	httpServers.Unlock()
	if srv.ReadHeaderTimeout == 0 || srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 || srv.MaxHeaderBytes == 0 {
		t.Errorf("timeouts: header %s read %s write %s idle %s, max header %d bytes; want all set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	request := "GET /v1/version HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 1000)
	limit := defaultHTTPLimits.readHeader + 2*time.Second
	cut := false
	for i := 0; i < len(request) && time.Since(start) < limit; i++ {
		if _, err := conn.Write([]byte{request[i]}); err != nil {
			cut = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !cut {
		// The write may still succeed after the close: a read tells.
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, err := conn.Read(make([]byte, 1))
		cut = err == io.EOF || (err != nil && !isTimeout(err))
	}
	if elapsed := time.Since(start); !cut || elapsed > limit {
		t.Errorf("a client sending its headers a byte every 20ms was not cut off within %s (cut %t after %s)", limit, cut, elapsed)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestHTTPInFlightCap: past the requests served at once, a request is
// answered 503 at once and counted; once one ends, requests are served.
func TestHTTPInFlightCap(t *testing.T) {
	addr := freeAddr(t)
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	lim := defaultHTTPLimits
	lim.maxInFlight = 2
	h, err := listenHTTPLimited(addr, slow, new(int), lim)
	if err != nil {
		t.Fatal(err)
	}
	defer h.release()
	client := &http.Client{Timeout: 5 * time.Second}
	status := func(path string) int {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { status("/slow") })
		<-entered
	}
	before := value(metrics.httpRefused)
	start := time.Now()
	if code := status("/fast"); code != http.StatusServiceUnavailable || time.Since(start) > time.Second {
		t.Errorf("a third request: %d after %s, want 503 at once", code, time.Since(start))
	}
	if got := value(metrics.httpRefused) - before; got != 1 {
		t.Errorf("refused requests counted %v, want 1", got)
	}
	close(release)
	wg.Wait()
	if code := status("/fast"); code != http.StatusOK {
		t.Errorf("after the slow ones: %d, want 200", code)
	}
}

// TestEnumerationEncoding: no state answers an empty list; an answer
// written across chunk boundaries reads back whole.
func TestEnumerationEncoding(t *testing.T) {
	e := &enumeration{zone: "mesos."}
	var empty bytes.Buffer
	body := e.finish()
	if _ = body.writeTo(&empty); empty.String() != "{\"frameworks\":[]}\n" || body.size != empty.Len() {
		t.Errorf("no state: %q (size %d)", empty.String(), body.size)
	}
	var c chunks
	want := bytes.Repeat([]byte("0123456789"), chunkSize/4)
	for p := want; len(p) > 0; p = p[min(len(p), 7777):] {
		c.write(p[:min(len(p), 7777)])
	}
	var got bytes.Buffer
	if _ = c.writeTo(&got); !bytes.Equal(got.Bytes(), want) || c.size != len(want) || len(c.parts) != 3 {
		t.Errorf("%d bytes in %d chunks read back as %d bytes, size %d", len(want), len(c.parts), got.Len(), c.size)
	}
}
