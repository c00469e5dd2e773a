package mesosmaster

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoIAM: the master was started without Options.IAM.
var ErrNoIAM = errors.New("mesosmaster: IAM is off")

// LoginPath is where DC/OS's IAM takes service logins.
const LoginPath = "/acs/api/v1/auth/login"

// iam stands in for the DC/OS Identity and Access Manager: a service
// account logs in with a JWT it signs with its private key (RS256, claims
// uid and exp) and gets an opaque token, which the masters then require as
// "Authorization: token=<token>".
type iam struct {
	logins atomic.Int64

	mu     sync.Mutex
	keys   map[string]*rsa.PublicKey // service account uid → public key
	tokens map[string]bool           // issued and not revoked
}

func newIAM() *iam {
	return &iam{keys: map[string]*rsa.PublicKey{}, tokens: map[string]bool{}}
}

// AddServiceAccount registers the public key that checks uid's login
// tokens.
func (m *Master) AddServiceAccount(uid string, key *rsa.PublicKey) error {
	if m.iam == nil {
		return ErrNoIAM
	}
	m.iam.mu.Lock()
	defer m.iam.mu.Unlock()
	m.iam.keys[uid] = key
	return nil
}

// RevokeTokens makes every token issued so far invalid, as their expiry
// does: a client must log in again.
func (m *Master) RevokeTokens() {
	if m.iam == nil {
		return
	}
	m.iam.mu.Lock()
	defer m.iam.mu.Unlock()
	clear(m.iam.tokens)
}

// Logins counts the login requests, successful or not.
func (m *Master) Logins() int {
	if m.iam == nil {
		return 0
	}
	return int(m.iam.logins.Load())
}

func (a *iam) valid(token string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return token != "" && a.tokens[token]
}

// loginRequest is the body of a service login.
type loginRequest struct {
	UID   string `json:"uid"`
	Token string `json:"token"`
}

// serveLogin answers a service login: 200 {"token": ...} for a login JWT
// signed by the account's key, 401 otherwise.
func (a *iam) serveLogin(w http.ResponseWriter, r *http.Request) {
	a.logins.Add(1)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeIAMError(w, http.StatusMethodNotAllowed, "ERR_METHOD_NOT_ALLOWED", "use POST")
		return
	}
	var req loginRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || req.UID == "" {
		writeIAMError(w, http.StatusBadRequest, "ERR_MALFORMED_REQUEST", "want {\"uid\": ..., \"token\": ...}")
		return
	}
	a.mu.Lock()
	key := a.keys[req.UID]
	a.mu.Unlock()
	if key == nil {
		writeIAMError(w, http.StatusUnauthorized, "ERR_INVALID_CREDENTIALS", "unknown service account "+req.UID)
		return
	}
	if err := verifyLoginToken(req.Token, req.UID, key, time.Now()); err != nil {
		writeIAMError(w, http.StatusUnauthorized, "ERR_INVALID_SERVICE_LOGIN_TOKEN", err.Error())
		return
	}
	token := newToken()
	a.mu.Lock()
	a.tokens[token] = true
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"token": token})
}

func writeIAMError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"title": http.StatusText(status), "description": description, "code": code})
}

// newToken returns a random opaque token.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails, per its documentation
	return hex.EncodeToString(b)
}

// verifyLoginToken checks a service login JWT: three base64url parts,
// header alg RS256, signature by key over "header.claims", claims with
// uid equal to uid and an exp after now.
func verifyLoginToken(token, uid string, key *rsa.PublicKey, now time.Time) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("a JWT has 3 parts, this one %d", len(parts))
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodePart(parts[0], &header); err != nil {
		return fmt.Errorf("JWT header: %w", err)
	}
	if header.Alg != "RS256" {
		return fmt.Errorf("JWT algorithm %q, want RS256", header.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("JWT signature: %w", err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("JWT signature: %w", err)
	}
	var claims struct {
		UID string   `json:"uid"`
		Exp *float64 `json:"exp"`
	}
	if err := decodePart(parts[1], &claims); err != nil {
		return fmt.Errorf("JWT claims: %w", err)
	}
	switch {
	case claims.UID != uid:
		return fmt.Errorf("JWT is for %q, the login for %q", claims.UID, uid)
	case claims.Exp == nil:
		return errors.New("JWT has no exp")
	case float64(now.Unix()) >= *claims.Exp:
		return fmt.Errorf("JWT expired at %v", time.Unix(int64(*claims.Exp), 0).UTC())
	}
	return nil
}

// decodePart decodes a base64url JSON part of a JWT into v.
func decodePart(part string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
