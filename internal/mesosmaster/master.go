// Package mesosmaster is a stand-in Mesos master for tests, demos and
// benchmarks: a real HTTP server on a loopback address that answers
// /master/state as a master does, leader or not, with the faults a
// client must survive (down, slow, failing, malformed) settable at any
// time, and the authentication a master may ask for (HTTP basic, DC/OS
// IAM tokens) over plain HTTP or TLS.
package mesosmaster

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// NoLeader, as a leader address, means no master leads: a master that
// is not leading and knows no leader answers 503.
const NoLeader = "none"

// gzipMinimum is the body size from which libprocess compresses a
// response for a client that accepts gzip.
const gzipMinimum = 1024

var (
	// ErrNotLoopback: the stand-in only listens on loopback addresses.
	ErrNotLoopback = errors.New("mesosmaster listens on loopback addresses only")
	// ErrClosed: the master was closed.
	ErrClosed = errors.New("mesosmaster is closed")
	// ErrAuthConflict: basic authentication and IAM both want the
	// Authorization header.
	ErrAuthConflict = errors.New("mesosmaster: basic authentication and IAM exclude each other")
)

// Options configures a master. The zero value is a leading master on
// 127.0.0.1 with a random port, serving an empty cluster over HTTP.
type Options struct {
	// Listen is the address, host:port, on a loopback IP: 127.0.0.2:5050
	// and 127.0.0.3:5050 can run side by side, as masters do on their
	// own hosts. Empty means 127.0.0.1:0 (any free port).
	Listen string
	// State is served, as mesosstatetest.Marshal writes it, with its leader,
	// pid and leader_info naming this master (see SetStateOf).
	State *mesosstate.State
	// Body, when not nil, is served as it is instead of State.
	Body []byte
	// Leader is where the leading master is, host:port as a redirect
	// names it: empty (or this master's address) for this one, NoLeader
	// for none.
	Leader string
	// Principal and Secret, when Principal is set, are the HTTP basic
	// credentials /master/state requires (401 without them).
	Principal, Secret string
	// TLS serves HTTPS, with a certificate for 127.0.0.1, ::1, localhost
	// and the listening address, signed by the CA in CAFile.
	TLS bool
	// IAM turns on the DC/OS IAM stand-in: /master/state requires
	// "Authorization: token=<token>", a token that POST
	// /acs/api/v1/auth/login gives for a service account's signed login
	// JWT (see AddServiceAccount).
	IAM bool
}

// Master is a running stand-in master.
type Master struct {
	addr      string // host:port, kept across SetDown
	pid       string // master@addr
	opts      Options
	tlsConfig *serverTLS // nil without TLS
	iam       *iam       // nil without IAM
	requests  atomic.Int64

	mu     sync.Mutex
	srv    *http.Server // nil while down
	closed bool
	leader string // "" this master leads, NoLeader, or the leader's host:port
	body   []byte
	gen    uint64 // counts SetState calls, to tell bodies apart cheaply
	gz     []byte // the body of generation gzGen compressed, made when first wanted
	gzGen  uint64
	delay  time.Duration
	status int
}

// Start starts a master.
func Start(opts Options) (*Master, error) {
	if opts.Principal != "" && opts.IAM {
		return nil, ErrAuthConflict
	}
	listen := opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if err := checkLoopback(listen); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("mesosmaster: listen: %w", err)
	}
	m := &Master{addr: ln.Addr().String(), opts: opts}
	m.pid = "master@" + m.addr
	m.SetLeader(opts.Leader)
	if opts.IAM {
		m.iam = newIAM()
	}
	if opts.TLS {
		if m.tlsConfig, err = newServerTLS(ln.Addr().(*net.TCPAddr).IP); err != nil {
			ln.Close()
			return nil, err
		}
	}
	switch {
	case opts.Body != nil:
		m.SetState(opts.Body)
	case opts.State != nil:
		m.SetStateOf(opts.State)
	default:
		m.SetStateOf(&mesosstate.State{})
	}
	m.serve(ln)
	return m, nil
}

// checkLoopback refuses an address that is not on a loopback IP.
func checkLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("mesosmaster: listen address %q: %w", hostport, err)
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.IsLoopback() {
		return fmt.Errorf("%w: %q", ErrNotLoopback, hostport)
	}
	return nil
}

// serve starts answering on ln. m.mu is held or m is not yet shared.
func (m *Master) serve(ln net.Listener) {
	if m.tlsConfig != nil {
		ln = m.tlsConfig.listener(ln)
	}
	srv := &http.Server{Handler: m.handler(), ReadHeaderTimeout: 10 * time.Second}
	m.srv = srv
	go func() { _ = srv.Serve(ln) }()
}

// handler routes the endpoints a master has that clients use.
func (m *Master) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/master/state", m.serveState)
	mux.HandleFunc("/master/state.json", m.serveState)
	if m.iam != nil {
		mux.HandleFunc(LoginPath, m.iam.serveLogin)
	}
	return mux
}

// Addr returns the address the master listens on, "127.0.0.1:port".
func (m *Master) Addr() string { return m.addr }

// PID returns the master's libprocess PID, master@Addr().
func (m *Master) PID() string { return m.pid }

// URL returns the base URL of the master: http:// or https:// and Addr().
func (m *Master) URL() string {
	if m.tlsConfig != nil {
		return "https://" + m.addr
	}
	return "http://" + m.addr
}

// Close stops the master for good: connections are closed, the port freed.
func (m *Master) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.stop()
	if m.tlsConfig != nil {
		_ = os.RemoveAll(m.tlsConfig.dir)
	}
}

// stop closes the listener and every connection. m.mu is held.
func (m *Master) stop() {
	if m.srv != nil {
		_ = m.srv.Close()
		m.srv = nil
	}
}

// SetDown takes the master down, as a crashed master process is: the
// port refuses connections and open ones are closed. SetDown(false)
// brings it back on the same address.
func (m *Master) SetDown(down bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if down {
		m.stop()
		return nil
	}
	if m.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return fmt.Errorf("mesosmaster: listen again on %s: %w", m.addr, err)
	}
	m.serve(ln)
	return nil
}

// SetState sets the body /master/state answers with while leading, served
// byte for byte: it may be truncated or not JSON at all.
func (m *Master) SetState(body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.body, m.gz = bytes.Clone(body), nil
	m.gen++
}

// SetStateOf serves s, as mesosstatetest.Marshal writes it, with its
// leader, pid and leader_info naming this master, as a leading master's
// state does (s itself is not changed). To serve other values, use
// SetState with Marshal's bytes.
func (m *Master) SetStateOf(s *mesosstate.State) {
	own := *s
	host, port := m.hostPort()
	own.Leader, own.PID, own.Hostname = m.pid, m.pid, host
	info := mesosstate.MasterInfo{ID: "mesosmaster-" + m.addr, PID: m.pid, Hostname: host, Port: port,
		Address: &mesosstate.Address{Hostname: host, IP: host, Port: port}}
	if s.LeaderInfo != nil && s.LeaderInfo.ID != "" {
		info.ID = s.LeaderInfo.ID
	}
	own.LeaderInfo = &info
	m.SetState(mesosstatetest.Marshal(&own))
}

func (m *Master) hostPort() (string, int) {
	ap := netip.MustParseAddrPort(m.addr)
	return ap.Addr().String(), int(ap.Port())
}

// SetLeader says where the leader is: Addr() (or "") makes this master
// the leader; NoLeader makes it a master that knows none (503); any other
// host:port makes it a non-leader that redirects there (307).
func (m *Master) SetLeader(addr string) {
	if addr == m.addr {
		addr = ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leader = addr
}

// SetDelay makes every answer wait d first, as an overloaded master does.
func (m *Master) SetDelay(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.delay = d
}

// SetStatus makes /master/state answer with the status code (500, 429...)
// once authenticated, whatever the leader; 0 goes back to normal.
func (m *Master) SetStatus(code int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status = code
}

// Requests counts the requests to /master/state and /master/state.json,
// whatever they were answered.
func (m *Master) Requests() int { return int(m.requests.Load()) }

// snapshot is what one request needs of m's settings.
type snapshot struct {
	leader string
	delay  time.Duration
	status int
	body   []byte
	gen    uint64
}

func (m *Master) snapshot() snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return snapshot{leader: m.leader, delay: m.delay, status: m.status, body: m.body, gen: m.gen}
}

// gzipped returns s's body compressed. It is compressed once per body, not
// per request: a benchmark polling a 20 MB state measures the client.
func (m *Master) gzipped(s snapshot) []byte {
	m.mu.Lock()
	gz, ok := m.gz, m.gzGen == s.gen && m.gz != nil
	m.mu.Unlock()
	if ok {
		return gz
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(s.body) // a bytes.Buffer does not fail
	_ = zw.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen == s.gen {
		m.gz, m.gzGen = buf.Bytes(), s.gen
	}
	return buf.Bytes()
}

// serveState answers /master/state as a master does: authentication,
// then the leader check (redirect or 503), then the state.
func (m *Master) serveState(w http.ResponseWriter, r *http.Request) {
	m.requests.Add(1)
	s := m.snapshot()
	if !wait(r, s.delay) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Expecting 'GET', received '"+r.Method+"'", http.StatusMethodNotAllowed)
		return
	}
	if !m.authenticated(w, r) {
		return
	}
	switch {
	case s.status != 0:
		http.Error(w, http.StatusText(s.status), s.status)
	case s.leader == NoLeader:
		http.Error(w, "No leader elected", http.StatusServiceUnavailable)
	case s.leader != "":
		// Scheme-relative, as a master writes it: the client keeps its
		// scheme and its credentials.
		w.Header().Set("Location", "//"+s.leader+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	default:
		m.writeBody(w, r, s)
	}
}

// wait sleeps d, or until the client gives up (false).
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// authenticated checks the credentials the master requires, answering 401
// when they are missing or wrong.
func (m *Master) authenticated(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case m.opts.Principal != "":
		user, pass, ok := r.BasicAuth()
		if ok && equal(user, m.opts.Principal) && equal(pass, m.opts.Secret) {
			return true
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="mesos"`)
	case m.iam != nil:
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "token=")
		if ok && m.iam.valid(token) {
			return true
		}
		w.Header().Set("WWW-Authenticate", "acsjwt")
	default:
		return true
	}
	http.Error(w, "Unauthorized", http.StatusUnauthorized)
	return false
}

// writeBody writes the state, compressed when the client accepts gzip and
// the body is large enough, as libprocess does.
func (m *Master) writeBody(w http.ResponseWriter, r *http.Request, s snapshot) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	body := s.body
	if len(body) >= gzipMinimum && acceptsGzip(r) {
		body = m.gzipped(s)
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// equal compares secrets in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
