package mesosmaster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	golog "log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestBasicAuth: the header is sent, and a refusal is reported as such.
func TestBasicAuth(t *testing.T) {
	m := serveMaster(t, leading)
	m.requireAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("dns:right")))
	for secret, wantErr := range map[string]error{"right": nil, "wrong": ErrUnauthorized, "": ErrUnauthorized} {
		cfg := Config{Masters: []string{m.addr}, InsecureCredentials: true}
		if secret != "" {
			cfg.Auth.Basic = &BasicAuth{Principal: "dns", Secret: secret}
		}
		c := newClient(t, cfg)
		_, err := c.Fetch(context.Background(), checkState)
		if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
			t.Errorf("secret %q: Fetch = %v, want %v", secret, err, wantErr)
		}
	}
}

// testCA is a CA made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate in PEM
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := newECKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, file: file}
}

func newECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// serverCert is a serving certificate for 127.0.0.1 signed by ca.
func (ca *testCA) serverCert(t *testing.T) tls.Certificate {
	t.Helper()
	key := newECKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "master"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLS: the CA file is trusted, another CA is not, and
// InsecureSkipVerify trusts anything only when asked.
func TestTLS(t *testing.T) {
	ca, other := newTestCA(t, "cluster-ca"), newTestCA(t, "other-ca")
	m := &fakeMaster{}
	m.srv = httptest.NewUnstartedServer(m.handler(leading))
	m.srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.serverCert(t)}}
	m.srv.Config.ErrorLog = golog.New(io.Discard, "", 0) // the refused handshakes
	m.srv.StartTLS()
	t.Cleanup(m.srv.Close)
	m.addr = m.srv.Listener.Addr().String()

	tests := []struct {
		name   string
		cfg    Config
		errMsg string
	}{
		{"cluster CA", Config{CAFile: ca.file}, ""},
		{"other CA", Config{CAFile: other.file}, "certificate signed by unknown authority"},
		{"system CAs", Config{}, "certificate signed by unknown authority"},
		{"insecure", Config{InsecureSkipVerify: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Masters, cfg.Scheme = []string{m.addr}, "https"
			c := newClient(t, cfg)
			res, err := c.Fetch(context.Background(), checkState)
			switch {
			case tt.errMsg == "" && err != nil:
				t.Errorf("Fetch: %v", err)
			case tt.errMsg == "" && res.Master != m.addr:
				t.Errorf("Master = %s, want %s", res.Master, m.addr)
			case tt.errMsg != "" && (err == nil || !strings.Contains(err.Error(), tt.errMsg)):
				t.Errorf("Fetch = %v, want an error with %q", err, tt.errMsg)
			}
		})
	}
}

// iamServer is a DC/OS IAM login endpoint: it checks the service account's
// RS256 assertion and hands out tokens, each valid until the next login or
// until revoked.
type iamServer struct {
	t        *testing.T
	key      *rsa.PublicKey
	srv      *httptest.Server
	logins   atomic.Int32 // successful ones
	attempts atomic.Int32
	expires  time.Duration // with it, tokens are JWTs that expire; else opaque
	refuse   bool          // refusals are the test's point, not a failure
	now      func() time.Time

	mu    sync.Mutex
	valid string // the token masters accept now
}

func newIAMServer(t *testing.T, key *rsa.PublicKey) *iamServer {
	s := &iamServer{t: t, key: key, now: time.Now}
	s.srv = httptest.NewServer(http.HandlerFunc(s.login))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *iamServer) login(w http.ResponseWriter, r *http.Request) {
	s.attempts.Add(1)
	var req struct{ UID, Token string }
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(req.Token, claims, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithExpirationRequired())
	exp, _ := claims.GetExpirationTime()
	if err != nil || req.UID != "dns-svc" || claims["uid"] != "dns-svc" ||
		exp.Sub(s.now()) < 59*time.Minute || exp.Sub(s.now()) > 61*time.Minute {
		if !s.refuse {
			s.t.Errorf("login %+v: claims %v, %v", req, claims, err)
		}
		http.Error(w, "bad assertion", http.StatusUnauthorized)
		return
	}
	n := s.logins.Add(1)
	token := fmt.Sprintf("opaque-%d", n)
	if s.expires > 0 {
		token, _ = jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"uid": "dns-svc", "n": n, "exp": jwt.NewNumericDate(s.now().Add(s.expires)),
		}).SignedString([]byte("iam-secret"))
	}
	s.mu.Lock()
	s.valid = token
	s.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]string{"token": token})
}

// revoke makes the masters refuse the current token.
func (s *iamServer) revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.valid = "revoked"
}

// master serves a state to the holders of the valid token.
func (s *iamServer) master(t *testing.T) *fakeMaster {
	return serveMaster(t, func(m *fakeMaster, w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ok := r.Header.Get("Authorization") == "token="+s.valid
		s.mu.Unlock()
		if !ok {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		leading(m, w, r)
	})
}

// writeIAMConfig writes a service account file with the key under keyField.
func writeIAMConfig(t *testing.T, key *rsa.PrivateKey, keyField, endpoint string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"uid":            "dns-svc",
		keyField:         string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"login_endpoint": endpoint,
	})
	path := filepath.Join(t.TempDir(), "iam.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIAM: one login serves many fetches; a refused token brings one new
// login; both names of the key field work.
func TestIAM(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"private_key", "secret"} {
		t.Run(field, func(t *testing.T) {
			iam := newIAMServer(t, &key.PublicKey)
			m := iam.master(t)
			file := writeIAMConfig(t, key, field, iam.srv.URL+"/acs/api/v1/auth/login")
			c := newClient(t, Config{Masters: []string{m.addr}, Auth: Auth{IAM: &IAMAuth{ConfigFile: file}}, InsecureCredentials: true})
			fetch := func(wantLogins int32) {
				t.Helper()
				if _, err := c.Fetch(context.Background(), checkState); err != nil {
					t.Fatal(err)
				}
				if n := iam.logins.Load(); n != wantLogins {
					t.Errorf("%d logins, want %d", n, wantLogins)
				}
			}
			fetch(1)
			fetch(1)
			fetch(1)
			iam.revoke()
			fetch(2)
			fetch(2)
		})
	}
}

// TestIAMRenewal: a token that is a JWT is renewed shortly before its exp.
func TestIAMRenewal(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iam := newIAMServer(t, &key.PublicKey)
	iam.expires = time.Hour
	m := iam.master(t)
	c := newClient(t, Config{Masters: []string{m.addr}, Auth: Auth{IAM: &IAMAuth{ConfigFile: writeIAMConfig(t, key, "private_key", iam.srv.URL)}}, InsecureCredentials: true})
	login := c.auth.(*iamLogin)
	var offset atomic.Int64
	login.now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	iam.now = login.now
	for _, step := range []struct {
		at     time.Duration
		logins int32
	}{{0, 1}, {50 * time.Minute, 1}, {56 * time.Minute, 2}, {60 * time.Minute, 2}} {
		offset.Store(int64(step.at))
		if _, err := c.Fetch(context.Background(), checkState); err != nil {
			t.Fatal(err)
		}
		if n := iam.logins.Load(); n != step.logins {
			t.Errorf("at +%s: %d logins, want %d", step.at, n, step.logins)
		}
	}
}

// TestIAMLoginFails: a refused login is reported with the IAM's answer, and
// ends the Fetch: the other masters would need the same login.
func TestIAMLoginFails(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iam := newIAMServer(t, &other.PublicKey)
	iam.refuse = true
	m1, m2 := iam.master(t), iam.master(t)
	c := newClient(t, Config{Masters: []string{m1.addr, m2.addr}, Auth: Auth{IAM: &IAMAuth{ConfigFile: writeIAMConfig(t, key, "private_key", iam.srv.URL)}}, InsecureCredentials: true})
	_, err = c.Fetch(context.Background(), checkState)
	if !errors.Is(err, ErrLogin) || !strings.Contains(err.Error(), "bad assertion") {
		t.Errorf("Fetch = %v, want the IAM's refusal", err)
	}
	if m1.hits.Load()+m2.hits.Load() != 0 {
		t.Errorf("a master was asked without a token")
	}
	if n := iam.attempts.Load(); n != 1 {
		t.Errorf("%d login attempts, want 1", n)
	}
}

// TestLoadIAMErrors: a bad service account file is reported at New.
func TestLoadIAMErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := map[string]struct{ path, want string }{
		"missing":  {filepath.Join(dir, "nope.json"), "no such file"},
		"not JSON": {write("a.json", "uid=x"), "not JSON (at byte 1)"},
		"empty":    {write("b.json", "{}"), "no uid"},
		"bad key":  {write("c.json", `{"uid":"u","private_key":"x","login_endpoint":"https://iam/login"}`), "private_key"},
		"endpoint": {write("d.json", `{"uid":"u","login_endpoint":"iam/login"}`), "login_endpoint"},
	}
	for name, tt := range tests {
		_, err := New(Config{Masters: []string{"m:5050"}, Auth: Auth{IAM: &IAMAuth{ConfigFile: tt.path}}, InsecureCredentials: true})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error with %q", name, err, tt.want)
		}
	}
}

// TestRenewTime covers tokens with and without a usable exp.
func TestRenewTime(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	jwtWith := func(claims jwt.MapClaims) string {
		s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte("k"))
		return s
	}
	tests := []struct {
		token string
		want  time.Time
	}{
		{"opaque", time.Time{}},
		{jwtWith(jwt.MapClaims{"uid": "u"}), time.Time{}},
		{jwtWith(jwt.MapClaims{"exp": now.Add(5 * 24 * time.Hour).Unix()}), now.Add(5*24*time.Hour - renewMargin)},
		{jwtWith(jwt.MapClaims{"exp": now.Add(4 * time.Minute).Unix()}), now.Add(2 * time.Minute)},
		{jwtWith(jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()}), time.Time{}},
	}
	for i, tt := range tests {
		if got := renewTime(tt.token, now); !got.Equal(tt.want) {
			t.Errorf("%d: renewTime = %v, want %v", i, got, tt.want)
		}
	}
}
