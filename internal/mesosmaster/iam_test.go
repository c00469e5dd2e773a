package mesosmaster

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	keysOnce   sync.Once
	key, other *rsa.PrivateKey
)

// testKeys returns two RSA keys, made once: 2048-bit keys take a while.
func testKeys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	keysOnce.Do(func() {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
		if other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
	})
	return key, other
}

// sign makes a JWT of header and claims signed with k (RS256), the way a
// DC/OS service account client does.
func sign(t *testing.T, header, claims map[string]any, k *rsa.PrivateKey) string {
	t.Helper()
	part := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := part(header) + "." + part(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func loginToken(t *testing.T, uid string, k *rsa.PrivateKey, exp time.Time) string {
	return sign(t, map[string]any{"alg": "RS256", "typ": "JWT"}, map[string]any{"uid": uid, "exp": exp.Unix()}, k)
}

// login posts a service login and returns the status and the token.
func login(t *testing.T, m *Master, uid, jwt string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"uid": uid, "token": jwt})
	resp, err := http.Post(m.URL()+LoginPath, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
		Code  string `json:"code"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("login answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK && out.Code == "" {
		t.Errorf("a failed login without an error code")
	}
	return resp.StatusCode, out.Token
}

func stateWithToken(t *testing.T, m *Master, token string) *http.Response {
	t.Helper()
	header := []string{}
	if token != "" {
		header = []string{"Authorization", "token=" + token}
	}
	resp, _ := get(t, noRedirect, m.URL()+"/master/state", header...)
	return resp
}

func TestIAM(t *testing.T) {
	key, _ := testKeys(t)
	m := start(t, Options{IAM: true})
	if err := m.AddServiceAccount("dns-sa", &key.PublicKey); err != nil {
		t.Fatal(err)
	}
	resp := stateWithToken(t, m, "")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "acsjwt" {
		t.Fatalf("no token: %s, %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := stateWithToken(t, m, "made-up"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("made-up token: %s", resp.Status)
	}
	status, token := login(t, m, "dns-sa", loginToken(t, "dns-sa", key, time.Now().Add(time.Minute)))
	if status != http.StatusOK || token == "" {
		t.Fatalf("login: %d, token %q", status, token)
	}
	if resp := stateWithToken(t, m, token); resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %s", resp.Status)
	}
	// Basic credentials are not a token.
	if resp, _ := get(t, noRedirect, m.URL()+"/master/state", "Authorization", "Basic ZG5zOnB3"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("basic credentials: %s", resp.Status)
	}
	m.RevokeTokens()
	if resp := stateWithToken(t, m, token); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("revoked token: %s", resp.Status)
	}
	if status, again := login(t, m, "dns-sa", loginToken(t, "dns-sa", key, time.Now().Add(time.Minute))); status != http.StatusOK || again == token {
		t.Fatalf("login again: %d, same token %v", status, again == token)
	}
	if got := m.Logins(); got != 2 {
		t.Errorf("Logins() = %d, want 2", got)
	}
}

func TestIAMRefusedLogins(t *testing.T) {
	key, other := testKeys(t)
	m := start(t, Options{IAM: true})
	_ = m.AddServiceAccount("dns-sa", &key.PublicKey)
	soon := time.Now().Add(time.Minute)
	for _, tc := range []struct {
		name, uid, jwt string
	}{
		{"unknown account", "nobody", loginToken(t, "nobody", key, soon)},
		{"another key", "dns-sa", loginToken(t, "dns-sa", other, soon)},
		{"another account's token", "dns-sa", loginToken(t, "admin", key, soon)},
		{"expired", "dns-sa", loginToken(t, "dns-sa", key, time.Now().Add(-time.Second))},
		{"no exp", "dns-sa", sign(t, map[string]any{"alg": "RS256"}, map[string]any{"uid": "dns-sa"}, key)},
		{"HS256", "dns-sa", sign(t, map[string]any{"alg": "HS256"}, map[string]any{"uid": "dns-sa", "exp": soon.Unix()}, key)},
		{"alg none", "dns-sa", strings.Join(strings.Split(sign(t, map[string]any{"alg": "none"},
			map[string]any{"uid": "dns-sa", "exp": soon.Unix()}, key), ".")[:2], ".") + "."},
		{"two parts", "dns-sa", "a.b"},
		{"not base64", "dns-sa", "!!.!!.!!"},
		{"empty", "dns-sa", ""},
	} {
		if status, token := login(t, m, tc.uid, tc.jwt); status != http.StatusUnauthorized || token != "" {
			t.Errorf("%s: %d, token %q", tc.name, status, token)
		}
	}
	// A signature of other claims does not carry over.
	good := strings.Split(loginToken(t, "dns-sa", key, soon), ".")
	forged := strings.Split(loginToken(t, "dns-sa", key, soon.Add(time.Hour)), ".")
	if status, _ := login(t, m, "dns-sa", good[0]+"."+forged[1]+"."+good[2]); status != http.StatusUnauthorized {
		t.Errorf("claims swapped under a signature: %d", status)
	}
	for _, tc := range []struct {
		method, body string
		want         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "not json", http.StatusBadRequest},
		{http.MethodPost, `{"token": "x"}`, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(tc.method, m.URL()+LoginPath, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %q: %s, want %d", tc.method, tc.body, resp.Status, tc.want)
		}
	}
}

func TestIAMOff(t *testing.T) {
	key, _ := testKeys(t)
	m := start(t, Options{})
	if err := m.AddServiceAccount("x", &key.PublicKey); !errors.Is(err, ErrNoIAM) {
		t.Errorf("AddServiceAccount without IAM = %v", err)
	}
	m.RevokeTokens()
	if resp, _ := get(t, noRedirect, m.URL()+LoginPath); resp.StatusCode != http.StatusNotFound {
		t.Errorf("login endpoint without IAM: %s", resp.Status)
	}
}
