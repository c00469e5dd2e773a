package mesosmaster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// testCA is the one CA of the process: every TLS master's certificate is
// signed by it, so a client trusting CAFile reaches them all.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var (
	caOnce sync.Once
	ca     *testCA
	caErr  error
)

func loadCA() (*testCA, error) {
	caOnce.Do(func() { ca, caErr = newCA() })
	return ca, caErr
}

func newCA() (*testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mesosmaster test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: CA certificate: %w", err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// serverTLS is a master's serving certificate and where its CA is written.
type serverTLS struct {
	ca     *testCA
	config *tls.Config
	cert   *x509.Certificate
	dir    string // holds ca.pem; removed by Close
}

// newServerTLS makes a certificate for 127.0.0.1, ::1, localhost and ip.
func newServerTLS(ip net.IP) (*serverTLS, error) {
	ca, err := loadCA()
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: server key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "mesos master " + ip.String()},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, ip}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: server certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: server certificate: %w", err)
	}
	dir, err := os.MkdirTemp("", "mesosmaster-tls-")
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.pem, 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("mesosmaster: write the CA: %w", err)
	}
	return &serverTLS{
		ca: ca,
		config: &tls.Config{MinVersion: tls.VersionTLS12,
			Certificates: []tls.Certificate{{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: cert}}},
		cert: cert, dir: dir,
	}, nil
}

func (s *serverTLS) listener(ln net.Listener) net.Listener { return tls.NewListener(ln, s.config) }

// CAFile returns the path of the PEM file of the CA that signed the
// master's certificate ("" without TLS). It is removed by Close.
func (m *Master) CAFile() string {
	if m.tlsConfig == nil {
		return ""
	}
	return filepath.Join(m.tlsConfig.dir, "ca.pem")
}

// CAPEM returns the CA certificate in PEM (nil without TLS).
func (m *Master) CAPEM() []byte {
	if m.tlsConfig == nil {
		return nil
	}
	return m.tlsConfig.ca.pem
}

// Certificate returns the master's serving certificate (nil without TLS).
func (m *Master) Certificate() *x509.Certificate {
	if m.tlsConfig == nil {
		return nil
	}
	return m.tlsConfig.cert
}

// Client returns an HTTP client that trusts the master's CA (any client
// for a master without TLS).
func (m *Master) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if m.tlsConfig != nil {
		pool := x509.NewCertPool()
		pool.AddCert(m.tlsConfig.ca.cert)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}
