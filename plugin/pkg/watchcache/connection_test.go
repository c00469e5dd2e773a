package watchcache

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// countingProxy is a TLS reverse proxy in front of the test's API server
// that counts the client connections it accepts and the /readyz requests.
type countingProxy struct {
	mu     sync.Mutex
	conns  map[string]bool // by the client's address
	readyz int
}

func (p *countingProxy) count(r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[r.RemoteAddr] = true
	if r.URL.Path == "/readyz" {
		p.readyz++
	}
}

func (p *countingProxy) counts() (conns, readyz int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns), p.readyz
}

// startCountingProxy serves the API server of rc through a proxy, and
// returns a kubeconfig that reaches it with rc's token.
func startCountingProxy(t *testing.T, rc *rest.Config) (*countingProxy, string) {
	t.Helper()
	target, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := rest.TransportFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: rc.CAData, CAFile: rc.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{conns: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = upstream
	rp.FlushInterval = -1 // watches stream
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r)
		rp.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: rc.BearerToken}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "admin"}
	kc.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return p, path
}

// TestOneConnectionOneProbe: every informer of a cache and a client made
// from its Connection (as multicluster's ClusterProperty watcher is) share
// one connection (so the apiserver_* limits hold for all of them), and
// /readyz is asked once per probe interval for the connection, not once
// per informer.
func TestOneConnectionOneProbe(t *testing.T) {
	e := newEnv(t, "oneconn")
	proxy, kubeconfig := startCountingProxy(t, e.cl.RESTConfig())
	defer func(old time.Duration) { probeInterval = old }(probeInterval)
	probeInterval = 100 * time.Millisecond

	all := Services | EndpointSlices | Namespaces | Pods | ServiceImports
	h, err := Acquire(Config{Kubeconfig: kubeconfig}, all)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if err := h.WaitForSync(e.ctx, all); err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(h.Connection())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := disco.ServerVersion(); err != nil {
		t.Fatalf("a client on the cache's connection: %v", err)
	}

	_, before := proxy.counts()
	start := time.Now()
	deadline := time.Now().Add(settle)
	for _, n := proxy.counts(); n < before+5 && time.Now().Before(deadline); _, n = proxy.counts() {
		time.Sleep(10 * time.Millisecond)
	}
	conns, after := proxy.counts()
	elapsed := time.Since(start)
	probes := after - before
	intervals := int(elapsed/probeInterval) + 1
	t.Logf("%d /readyz requests in %s (%d intervals of %s), %d connection(s), 5 informers and a client on Connection", probes, elapsed.Round(time.Millisecond), intervals, probeInterval, conns)
	if probes < 5 {
		t.Fatalf("%d /readyz requests in %s: the probe does not run", probes, elapsed)
	}
	if probes > intervals+1 {
		t.Errorf("%d /readyz requests in %d probe intervals: more than one probe per interval for one connection", probes, intervals)
	}
	if conns != 1 {
		t.Errorf("the informers and the client on Connection used %d connections, want 1", conns)
	}
}
