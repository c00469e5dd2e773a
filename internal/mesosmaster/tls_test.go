package mesosmaster

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

func TestTLS(t *testing.T) {
	m := start(t, Options{TLS: true, Principal: "dns", Secret: "pw"})
	if m.URL() != "https://"+m.Addr() {
		t.Fatalf("URL() = %q", m.URL())
	}
	data, err := os.ReadFile(m.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" || string(data) != string(m.CAPEM()) {
		t.Fatalf("CA file %q is not the CA's PEM", m.CAFile())
	}
	caCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !caCert.IsCA {
		t.Fatalf("CA: %v", err)
	}
	cert := m.Certificate()
	if err := cert.CheckSignatureFrom(caCert); err != nil {
		t.Fatalf("server certificate: %v", err)
	}
	for _, host := range []string{"127.0.0.1", "::1", "localhost"} {
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, m.URL()+"/master/state", nil)
	req.SetBasicAuth("dns", "pw")
	resp, err := m.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("HTTPS: %s", resp.Status)
	}
	// A client without the CA is refused by its own verification.
	if _, err := http.Get(m.URL() + "/master/state"); err == nil {
		t.Fatal("a client without the CA trusted the master")
	}
	// Plain HTTP to a TLS port does not get a state.
	if resp, err := http.Get("http://" + m.Addr() + "/master/state"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP got a state")
		}
	}
	m.Close()
	if _, err := os.Stat(m.CAFile()); !os.IsNotExist(err) {
		t.Errorf("CA file left after Close: %v", err)
	}
}

// TestTLSTwoMasters: one CA signs every master's certificate, so a client
// configured with one CA file reaches the leader a redirect names.
func TestTLSTwoMasters(t *testing.T) {
	leader := start(t, Options{TLS: true, Listen: "127.0.0.2:0"})
	other := start(t, Options{TLS: true, Listen: "127.0.0.3:0", Leader: leader.Addr()})
	resp, err := other.Client().Get(other.URL() + "/master/state")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Host != leader.Addr() || resp.Request.URL.Scheme != "https" {
		t.Fatalf("redirected to %s: %s", resp.Request.URL, resp.Status)
	}
}

func TestTLSIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
	m := start(t, Options{TLS: true, Listen: "[::1]:0"})
	resp, err := m.Client().Get(m.URL() + "/master/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mesosstate.Decode(body)
	if err != nil || s.Leader != m.PID() {
		t.Fatalf("state over IPv6: %v", err)
	}
	if pid, err := mesosstate.ParsePID(s.Leader); err != nil || pid.Host != "::1" {
		t.Fatalf("leader %q: %+v, %v", s.Leader, pid, err)
	}
}
