package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/caddy"
)

// httpBody GETs url, which must answer 200 with JSON.
func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s, Content-Type %q, %v: %s", url, resp.Status, resp.Header.Get("Content-Type"), err, body)
	}
	return string(body)
}

// httpGetJSON GETs url and decodes its JSON answer into v.
func httpGetJSON(t *testing.T, url string, v any) {
	t.Helper()
	body := httpBody(t, url)
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

// Mesos-DNS's HTTP answers (its docs/http.md).
type (
	mesosHost struct {
		Host string `json:"host"`
		IP   string `json:"ip"`
	}
	mesosService struct {
		Service string `json:"service"`
		Host    string `json:"host"`
		IP      string `json:"ip"`
		Port    string `json:"port"`
	}
	mesosEnumeration struct {
		Frameworks []struct {
			Name  string `json:"name"`
			Tasks []struct {
				Name    string `json:"name"`
				ID      string `json:"id"`
				Records []struct {
					Name  string `json:"name"`
					Host  string `json:"host"`
					Rtype string `json:"rtype"`
				} `json:"records"`
			} `json:"tasks"`
		} `json:"frameworks"`
	}
)

// sortedBy sorts s by the string key gives, and returns it.
func sortedBy[T any](s []T, key func(T) string) []T {
	slices.SortFunc(s, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return s
}

// TestMesosHTTP asks the HTTP interface (`http 127.0.0.1:PORT`) over real
// HTTP: /v1/hosts, /v1/services and /v1/enumerate answer the served
// records in Mesos-DNS's shapes, and a name without records one empty
// entry.
func TestMesosHTTP(t *testing.T) {
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	_, master := mesosServer{zones: "mesos", options: []string{"http " + httpAddr}}.start(t)
	base := "http://" + httpAddr

	var hosts []mesosHost
	httpGetJSON(t, base+"/v1/hosts/Search.Marathon.mesos", &hosts)
	want := []mesosHost{{"search.marathon.mesos.", "10.0.1.21"}, {"search.marathon.mesos.", "10.0.1.22"}}
	if got := sortedBy(hosts, func(h mesosHost) string { return h.IP }); !slices.Equal(got, want) {
		t.Errorf("/v1/hosts/Search.Marathon.mesos: %v, want %v", got, want)
	}
	httpGetJSON(t, base+"/v1/hosts/nothing.mesos.", &hosts)
	if !slices.Equal(hosts, []mesosHost{{}}) {
		t.Errorf("/v1/hosts/nothing.mesos.: %v, want one empty entry", hosts)
	}

	var services []mesosService
	httpGetJSON(t, base+"/v1/services/_web._tcp.marathon.mesos", &services)
	svc := func(target, ip, port string) mesosService {
		return mesosService{"_web._tcp.marathon.mesos", target, ip, port}
	}
	wantSvc := []mesosService{
		svc("web-kbrou-s1.marathon.mesos.", "172.17.0.2", "31301"), svc("web-kbrou-s1.marathon.mesos.", "172.17.0.2", "31302"),
		svc("web-grm4c-s2.marathon.mesos.", "172.17.0.3", "31401"), svc("web-grm4c-s2.marathon.mesos.", "172.17.0.3", "31402")}
	if got := sortedBy(services, func(s mesosService) string { return s.Port }); !slices.Equal(got, wantSvc) {
		t.Errorf("/v1/services/_web._tcp.marathon.mesos: %v, want %v", got, wantSvc)
	}
	httpGetJSON(t, base+"/v1/services/_leader._tcp.mesos.", &services)
	wantLeader := []mesosService{{"_leader._tcp.mesos.", "leader.mesos.", mesosMasterIP, strconv.Itoa(masterPort(t, master))}}
	if !slices.Equal(services, wantLeader) {
		t.Errorf("/v1/services/_leader._tcp.mesos.: %v, want %v", services, wantLeader)
	}

	var enum mesosEnumeration
	httpGetJSON(t, base+"/v1/enumerate", &enum)
	tasks := map[string][]string{} // "framework/task" to its records
	var frameworks []string
	for _, fw := range enum.Frameworks {
		frameworks = append(frameworks, fw.Name)
		for _, task := range fw.Tasks {
			for _, r := range task.Records {
				tasks[fw.Name+"/"+task.Name] = append(tasks[fw.Name+"/"+task.Name], r.Rtype+" "+r.Name+" "+r.Host)
			}
		}
	}
	slices.Sort(frameworks)
	if want := []string{"My Framework", "marathon", "marathon.prod", "metronome"}; !slices.Equal(frameworks, want) {
		t.Errorf("/v1/enumerate frameworks %v, want %v", frameworks, want)
	}
	for _, c := range []struct{ task, record string }{
		{"My Framework/Worker_1", "A worker-1.myframework.mesos. 192.168.50.7"},
		{"My Framework/Worker_1", "SRV _grpc._worker-1._tcp.myframework.mesos. worker-1-jm7ty-s2.myframework.mesos.:9090"},
		{"marathon/apiserver.myservice", "AAAA apiserver-myservice.marathon.mesos. 2001:db8:1::23"},
		{"metronome/backup", "A backup-7rotk-s0.metronome.slave.mesos. 10.0.1.21"},
	} {
		if !slices.Contains(tasks[c.task], c.record) {
			t.Errorf("/v1/enumerate: %s has no record %q: %v", c.task, c.record, tasks[c.task])
		}
	}
	if _, ok := tasks["marathon/cache"]; ok {
		t.Errorf("/v1/enumerate lists the staging task cache: %v", tasks["marathon/cache"])
	}
}

// TestMesosHTTPAcrossReload reloads the server (caddy's Restart, as the
// reload plugin does) while a client asks the HTTP interface without
// pause: the new instance takes the old one's `http` address over (both
// cannot listen), no request fails, the new configuration answers after
// the reload, and the address is free once the server stops.
func TestMesosHTTPAcrossReload(t *testing.T) {
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	master := startMesosMaster(t, exampleMesosState(t))
	corefile := func(refresh int) string {
		return mesosServer{zones: "mesos", options: []string{"http " + httpAddr, fmt.Sprintf("refresh %ds", refresh)}}.corefile(master.Addr())
	}
	first := startServer(t, corefile(10)).inst
	url := "http://" + httpAddr + "/v1/config"
	refreshSeconds := func() (int, error) {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		var c struct{ RefreshSeconds int }
		err = json.NewDecoder(resp.Body).Decode(&c)
		return c.RefreshSeconds, err
	}

	var answered atomic.Int64
	var mu sync.Mutex
	var failures []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := refreshSeconds(); err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				continue
			}
			answered.Add(1)
		}
	})
	// startServer stops the first instance, a reload the one it
	// replaces; the last one is stopped here, or when the test ends.
	last, stopped := first, false
	stopLast := func() {
		if last != first && !stopped {
			stopped = true
			last.Stop()
			last.ShutdownCallbacks()
		}
	}
	t.Cleanup(stopLast)
	for i := range 5 {
		caddyMu.Lock()
		next, err := last.Restart(caddy.CaddyfileInput{Contents: []byte(corefile(11 + i)), Filepath: "Corefile", ServerTypeName: "dns"})
		caddyMu.Unlock()
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("reload %d: %v", i+1, err)
		}
		last = next
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	if len(failures) != 0 || answered.Load() == 0 {
		t.Errorf("during reloads: %d answered, %d failed: %v", answered.Load(), len(failures), failures)
	}
	if got, err := refreshSeconds(); err != nil || got != 15 {
		t.Errorf("after the reloads /v1/config says refresh %ds (%v), want 15 (the last Corefile's)", got, err)
	}
	stopLast()
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		t.Fatalf("%s still taken after the server stopped: %v", httpAddr, err)
	}
	ln.Close()
}
