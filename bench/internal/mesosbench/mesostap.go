package mesosbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/schemadns/schemadns/internal/mesosmaster"
)

// standIn is the Mesos master of a shape: internal/mesosmaster's stand-in, in
// this process, behind a tap. The servers are given the tap's address (and
// the states name it as the leader), so every poll passes through it: the
// tap records when the poll arrives and when the master's answer starts and
// ends, and runs a hook at the arrival, before the poll is forwarded, while
// the polling server waits (the moment its CPU time is read).
//
// internal/mesosmaster has no hook of its own; the tap costs a loopback hop
// (well under a millisecond next to a poll of megabytes), which the
// poll-to-answer times include.
type standIn struct {
	master *mesosmaster.Master
	addr   string // the tap's host:port
	srv    *http.Server
	proxy  *httputil.ReverseProxy
	// warm asks the master for the gzipped body right after it is set, so
	// that the master compresses it before the next poll, not during it
	// (internal/mesosmaster compresses a body once, when first asked).
	warm *http.Client
	hook atomic.Pointer[func() pollSample]
	// events has one entry per poll answered; when nobody reads them the
	// oldest are not kept (see tapped).
	events chan pollEvent
	// serving is the body set last, by the one goroutine that sets bodies.
	serving []byte
	gzLen   int
}

// pollEvent is one poll that passed the tap.
type pollEvent struct {
	// arrived: the request reached the tap; answered: the master's answer
	// started (its status and headers reached the tap); done: the tap
	// wrote the last byte of the body to the poller's connection.
	arrived, answered, done time.Time
	status                  int
	length                  int // the answer's Content-Length: the gzipped body's size
	sample                  pollSample
}

// pollSample is what the hook read at a poll's arrival.
type pollSample struct {
	cpu, idle float64 // CPU seconds of the polling server and of the idle one
	// metrics and serial are read only at the first and last arrival of a
	// series (metrics nil otherwise).
	metrics map[string]float64
	serial  uint32
}

// startStandIn starts the master, serving an empty cluster, and the tap on
// a free loopback port.
func startStandIn() (*standIn, error) {
	m, err := mesosmaster.Start(mesosmaster.Options{})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		m.Close()
		return nil, err
	}
	target, _ := url.Parse(m.URL())
	// The poller's Accept-Encoding is forwarded as it came: with it set,
	// the transport neither adds its own nor decompresses.
	transport := &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 4}
	s := &standIn{
		master: m, addr: ln.Addr().String(), events: make(chan pollEvent, 256),
		proxy: &httputil.ReverseProxy{
			Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
			Transport: transport,
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				http.Error(w, err.Error(), http.StatusBadGateway)
			},
		},
		warm: &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}, Timeout: time.Minute},
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// close stops the tap and the master.
func (s *standIn) close() {
	_ = s.srv.Close()
	s.master.Close()
}

// ServeHTTP is the tap: hook, forward, record.
func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev := pollEvent{arrived: time.Now()}
	if h := s.hook.Load(); h != nil {
		ev.sample = (*h)()
	}
	sw := &stampWriter{ResponseWriter: w}
	s.proxy.ServeHTTP(sw, r)
	ev.answered, ev.status, ev.length, ev.done = sw.at, sw.status, sw.length, time.Now()
	s.tapped(ev)
}

// tapped queues ev, making room by dropping the oldest event when nobody
// has read them (between the tests).
func (s *standIn) tapped(ev pollEvent) {
	for {
		select {
		case s.events <- ev:
			return
		default:
		}
		select {
		case <-s.events:
		default:
		}
	}
}

// setHook sets the function run at each arrival (nil: none).
func (s *standIn) setHook(h func() pollSample) {
	if h == nil {
		s.hook.Store(nil)
		return
	}
	s.hook.Store(&h)
}

// drain forgets the polls seen so far.
func (s *standIn) drain() {
	for {
		select {
		case <-s.events:
		default:
			return
		}
	}
}

// errNoPoll: no poll passed the tap in time.
var errNoPoll = errors.New("no poll reached the stand-in master")

// next waits for the next poll to be answered.
func (s *standIn) next(ctx context.Context, within time.Duration) (pollEvent, error) {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case ev := <-s.events:
		if ev.status != http.StatusOK {
			return ev, fmt.Errorf("the stand-in master answered a poll with %d", ev.status)
		}
		return ev, nil
	case <-t.C:
		return pollEvent{}, fmt.Errorf("%w within %s", errNoPoll, within)
	case <-ctx.Done():
		return pollEvent{}, ctx.Err()
	}
}

// serve makes the master answer body from now on (unless it already
// does), has it compressed, and returns the gzipped size, which the poll
// events carry as their length.
func (s *standIn) serve(body []byte) (int, error) {
	if len(body) == len(s.serving) && len(body) > 0 && &body[0] == &s.serving[0] {
		return s.gzLen, nil
	}
	s.master.SetState(body)
	s.serving = body
	req, err := http.NewRequest(http.MethodGet, s.master.URL()+"/master/state", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := s.warm.Do(req)
	if err != nil {
		return 0, fmt.Errorf("warm the stand-in master: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("warm the stand-in master: %w", err)
	}
	s.gzLen = int(n)
	return s.gzLen, nil
}

// stampWriter notes when the answer starts, with its status and length.
type stampWriter struct {
	http.ResponseWriter
	at             time.Time
	status, length int
}

func (w *stampWriter) WriteHeader(code int) {
	if w.at.IsZero() {
		w.at, w.status = time.Now(), code
		w.length, _ = strconv.Atoi(w.Header().Get("Content-Length"))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *stampWriter) Write(b []byte) (int, error) {
	if w.at.IsZero() {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *stampWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
