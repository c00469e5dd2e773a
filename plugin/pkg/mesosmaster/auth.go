package mesosmaster

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// authorizer gives the Authorization header for the masters and hears when
// they refuse it.
type authorizer interface {
	// header returns the header's value.
	header(ctx context.Context) (string, error)
	// refused tells that a master answered 401 to value, and reports whether
	// asking header again can give other credentials worth a retry.
	refused(value string) bool
}

// basicAuth is a fixed "Basic" header: nothing to renew.
type basicAuth string

func newBasicAuth(b *BasicAuth) basicAuth {
	return basicAuth("Basic " + base64.StdEncoding.EncodeToString([]byte(b.Principal+":"+b.Secret)))
}

func (b basicAuth) header(context.Context) (string, error) { return string(b), nil }
func (b basicAuth) refused(string) bool                    { return false }

// IAM tokens: the login assertion lives an hour, as DC/OS's own clients make
// it; a token is renewed renewMargin before its expiry (or half-way through
// its remaining life when that is shorter), so that a poll never starts
// with a token about to lapse.
const (
	assertionLifetime = time.Hour
	renewMargin       = 5 * time.Minute
	// maxLoginBody bounds the login answer, a small JSON object.
	maxLoginBody = 1 << 20
)

// iamFile is the service account file of a DC/OS IAM login.
type iamFile struct {
	UID           string `json:"uid"`
	PrivateKey    string `json:"private_key"`
	Secret        string `json:"secret"` // Mesos-DNS's name for private_key
	LoginEndpoint string `json:"login_endpoint"`
}

// iamLogin holds a DC/OS IAM token and logs in again when the token is
// refused or near its expiry. Mesos-DNS logs in before every request; a
// poller that does so doubles its requests and loads the IAM service.
type iamLogin struct {
	uid      string
	key      *rsa.PrivateKey
	endpoint string
	shown    string // endpoint with its userinfo's password hidden, for messages
	client   *http.Client
	timeout  time.Duration
	now      func() time.Time // time.Now; tests move it

	mu      sync.Mutex // held across a login, so that only one runs
	token   string     // "" until the first login and after a refusal
	renewAt time.Time  // when to log in again; zero: only once refused
}

// loadIAM reads the service account file at path. Its login endpoint
// must be https unless plainOK. No error quotes the file's content.
func loadIAM(path string, client *http.Client, timeout time.Duration, plainOK bool) (*iamLogin, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth iam: %w", err)
	}
	var f iamFile
	if err := json.Unmarshal(raw, &f); err != nil {
		// A syntax error's offset, not its text: the text may quote the key.
		return nil, fmt.Errorf("auth iam: %s: %w", path, jsonErrorWithoutContent(err))
	}
	if f.PrivateKey == "" {
		f.PrivateKey = f.Secret
	}
	var errs []error
	if f.UID == "" {
		errs = append(errs, errors.New("no uid"))
	}
	endpoint, err := url.Parse(f.LoginEndpoint)
	switch {
	case err != nil || (endpoint.Scheme != "http" && endpoint.Scheme != "https") || endpoint.Host == "":
		errs = append(errs, errors.New("login_endpoint: want an http(s) URL"))
	case endpoint.Scheme == "http" && !plainOK:
		errs = append(errs, fmt.Errorf("login_endpoint %s: %w: the login's signed assertion and the token travel in clear", endpoint.Redacted(), ErrInsecureCredentials))
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(f.PrivateKey))
	if err != nil {
		errs = append(errs, fmt.Errorf("private_key: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("auth iam: %s: %w", path, err)
	}
	return &iamLogin{uid: f.UID, key: key, endpoint: f.LoginEndpoint, shown: endpoint.Redacted(), client: client, timeout: timeout, now: time.Now}, nil
}

// jsonErrorWithoutContent keeps what says where a JSON document is
// broken, and drops what quotes it.
func jsonErrorWithoutContent(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("not JSON (at byte %d)", syntax.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("field %s: a JSON %s, want a %s", typ.Field, typ.Value, typ.Type)
	}
	return errors.New("not a JSON object")
}

// header returns the token held, logging in first when there is none or it
// is due for renewal.
func (l *iamLogin) header(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.token == "" || (!l.renewAt.IsZero() && !l.now().Before(l.renewAt)) {
		token, renewAt, err := l.login(ctx)
		if err != nil {
			return "", err
		}
		l.token, l.renewAt = token, renewAt
	}
	return "token=" + l.token, nil
}

// refused drops the token the master refused, unless a newer one has
// replaced it already.
func (l *iamLogin) refused(value string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if value == "token="+l.token {
		l.token = ""
	}
	return true
}

// login posts a fresh RS256 assertion of the uid to the login endpoint and
// returns the token it answers with and when to renew it.
func (l *iamLogin) login(ctx context.Context) (string, time.Time, error) {
	now := l.now()
	assertion, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"uid": l.uid,
		"exp": jwt.NewNumericDate(now.Add(assertionLifetime)),
	}).SignedString(l.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: sign: %w", ErrLogin, err)
	}
	body, err := json.Marshal(struct {
		UID   string `json:"uid"`
		Token string `json:"token"`
	}{l.uid, assertion})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrLogin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrLogin, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrLogin, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, fmt.Errorf("%w at %s: %s: %s", ErrLogin, l.shown, resp.Status, snippet(resp.Body))
	}
	var answer struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxLoginBody)).Decode(&answer); err != nil {
		return "", time.Time{}, fmt.Errorf("%w at %s: answer: %w", ErrLogin, l.shown, jsonErrorWithoutContent(err))
	}
	if answer.Token == "" {
		return "", time.Time{}, fmt.Errorf("%w at %s: no token in the answer", ErrLogin, l.shown)
	}
	return answer.Token, renewTime(answer.Token, now), nil
}

// renewTime is when to renew token, read from its exp claim when it is a
// JWT (DC/OS's are). The signature is not checked: the masters do that, and
// a wrong exp only moves a login. Zero means: keep it until it is refused.
func renewTime(token string, now time.Time) time.Time {
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, claims); err != nil {
		return time.Time{}
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil || !exp.After(now) {
		return time.Time{}
	}
	return exp.Add(-min(renewMargin, exp.Sub(now)/2))
}

// snippetSize is how much of an error body a message quotes.
const snippetSize = 256

// snippet returns the start of an error body, for messages.
func snippet(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, snippetSize))
	return string(bytes.TrimSpace(b))
}
