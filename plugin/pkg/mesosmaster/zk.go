package mesosmaster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	// zkSessionTimeout is Mesos's own default (--zk_session_timeout): a
	// master that vanishes leaves the election after this long.
	zkSessionTimeout = 10 * time.Second
	// zkRetryDelay spaces the reads of the group that failed.
	zkRetryDelay = time.Second
	// zkPoll is how often the group is read. The library's watches are not
	// used: on a reconnection it sets them again from a goroutine that
	// races with its receive loop over the last zxid (go-zookeeper/zk, open
	// pull request 35; v1.0.4 is the latest), which the race detector
	// reports. Listing a few children twice a second costs the ensemble
	// little, and a new leader is known within it.
	zkPoll = 500 * time.Millisecond
	// zkMaxPacket bounds what the client accepts from a ZooKeeper server:
	// the server's own default limit (jute.maxbuffer) is 1 MiB.
	zkMaxPacket = 4 << 20
	// memberPrefix names the masters' znodes in the group: "json.info_"
	// and a sequence number; the lowest sequence leads. Older masters'
	// protobuf "info_" znodes and other children are ignored.
	memberPrefix = "json.info_"
)

// detector follows the masters' election in ZooKeeper: it reads the
// group's children every zkPoll and keeps the leader, the member with the
// lowest sequence number.
type detector struct {
	zk      zkURL
	timeout time.Duration // Config.ZKTimeout

	life    sync.Mutex                // orders start and stop
	conn    *zk.Conn                  // set by start
	events  <-chan zk.Event           // closed once the library's goroutines are done
	started atomic.Pointer[time.Time] // when start ran, for awaitFirstAnswer's deadline

	current   atomic.Pointer[string] // the leader's host:port; nil: none known
	connected atomic.Bool            // the session is up
	changed   chan struct{}          // one pending value: the leader changed
	answered  chan struct{}          // closed at the first read of the group
	answer    sync.Once              // closes answered

	// elected is the leader's znode name and address last read: a znode's
	// data never changes, so it is read again only for another name. Owned
	// by run.
	elected     member
	electedAddr string

	mu        sync.Mutex // guards the log state below
	outage    bool       // an outage was logged and its end not yet
	badMember string     // the last member whose data could not be read, logged once

	stopping chan struct{} // closed by stop
	done     chan struct{} // closed when run returns
}

func newDetector(u zkURL, timeout time.Duration) *detector {
	return &detector{
		zk:       u,
		timeout:  timeout,
		changed:  make(chan struct{}, 1),
		answered: make(chan struct{}),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// start opens the session, in the background, and starts following the
// group.
func (d *detector) start() error {
	d.life.Lock()
	defer d.life.Unlock()
	select {
	case <-d.stopping:
		return ErrStopped
	default:
	}
	if d.conn != nil {
		return nil
	}
	now := time.Now()
	d.started.Store(&now)
	conn, events, err := zk.Connect(d.zk.servers, zkSessionTimeout,
		zk.WithHostProvider(&staticHosts{}),
		zk.WithDialer(handshakeDialer(len(d.zk.servers))),
		zk.WithLogger(zkLogger{}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(d.onEvent),
		zk.WithMaxBufferSize(zkMaxPacket))
	if err != nil {
		return fmt.Errorf("ZooKeeper %s: %w", d.name(), err)
	}
	d.conn, d.events = conn, events
	go d.run()
	return nil
}

// stop closes the session and waits until the detector's goroutine and the
// library's are gone.
func (d *detector) stop() {
	d.life.Lock()
	defer d.life.Unlock()
	select {
	case <-d.stopping:
		return
	default:
	}
	close(d.stopping)
	if d.conn == nil {
		return
	}
	d.conn.Close()
	<-d.done
	for range d.events {
	}
}

// leader returns the leader last named; false if none is known.
func (d *detector) leader() (string, bool) {
	if p := d.current.Load(); p != nil {
		return *p, true
	}
	return "", false
}

// awaitFirstAnswer waits, until ZKTimeout after start, for the first read of
// the group, so that the first Fetch asks the leader rather than whichever
// master is configured first.
func (d *detector) awaitFirstAnswer(ctx context.Context) {
	select {
	case <-d.answered:
		return
	default:
	}
	started := d.started.Load()
	if started == nil {
		return // not started: nothing to wait for
	}
	wait := time.Until(started.Add(d.timeout))
	if wait <= 0 {
		d.noAnswer()
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-d.answered:
	case <-timer.C:
		d.noAnswer()
	case <-ctx.Done():
	case <-d.stopping:
	}
}

// noAnswer logs, once per outage, that ZooKeeper has not answered in time.
func (d *detector) noAnswer() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.outage {
		return
	}
	d.outage = true
	log.Warningf("ZooKeeper %s: no answer within %s; asking the configured masters", d.name(), d.timeout)
}

// name is the ensemble and path, for messages.
func (d *detector) name() string {
	return strings.Join(d.zk.servers, ",") + d.zk.path
}

// run reads the group and its leader every zkPoll, until stop. Errors are
// retried: the library reconnects by itself, and a request made while it
// is disconnected fails after a round of the servers. Those are the outage
// that setConnected logs; an error with the session up (an ACL, say) is
// logged once until a read succeeds.
func (d *detector) run() {
	defer close(d.done)
	if d.zk.auth != "" && !d.addAuth() {
		return
	}
	failing := false
	for {
		delay := zkPoll
		if err := d.readGroup(); err != nil {
			if !failing && d.connected.Load() {
				log.Warningf("ZooKeeper %s: %v; retrying", d.name(), err)
				failing = true
			} else {
				log.Debugf("ZooKeeper %s: %v", d.name(), err)
			}
			delay = zkRetryDelay
		} else {
			failing = false
		}
		if !d.sleep(delay) {
			return
		}
	}
}

// addAuth gives the digest credentials, which the library sends again on
// each reconnection; false means stop came first.
func (d *detector) addAuth() bool {
	for {
		err := d.conn.AddAuth("digest", []byte(d.zk.auth))
		if err == nil {
			return true
		}
		log.Debugf("ZooKeeper %s: add credentials: %v", d.name(), err)
		if !d.sleep(zkRetryDelay) {
			return false
		}
	}
}

// sleep waits for delay, or returns false at stop.
func (d *detector) sleep(delay time.Duration) bool {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-d.stopping:
		return false
	}
}

// readGroup reads the leader from the group's children; a group that does
// not exist yet (no master has registered) has none.
func (d *detector) readGroup() error {
	children, _, err := d.conn.Children(d.zk.path)
	if errors.Is(err, zk.ErrNoNode) {
		d.setLeader("", false)
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", d.zk.path, err)
	}
	leader, known, err := d.electedLeader(children)
	if err != nil {
		return err
	}
	d.setLeader(leader, known)
	return nil
}

// member is one master's znode in the group.
type member struct {
	name string
	seq  uint64
}

// electedLeader returns the address of the member with the lowest sequence.
// False means none is known: no member, or the leader's data unreadable (the
// next member is not the leader, and naming it would be wrong).
func (d *detector) electedLeader(children []string) (string, bool, error) {
	var members []member
	for _, name := range children {
		digits, ok := strings.CutPrefix(name, memberPrefix)
		if seq, err := strconv.ParseUint(digits, 10, 64); ok && err == nil {
			members = append(members, member{name, seq})
		}
	}
	slices.SortFunc(members, func(a, b member) int { return cmpUint(a.seq, b.seq) })
	for _, m := range members {
		if m == d.elected {
			return d.electedAddr, true, nil
		}
		data, _, err := d.conn.Get(d.zk.path + "/" + m.name)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing
		}
		if err != nil {
			return "", false, fmt.Errorf("read %s/%s: %w", d.zk.path, m.name, err)
		}
		addr, err := masterAddress(data)
		if err != nil {
			d.logBadMember(m.name, err)
			return "", false, nil
		}
		d.elected, d.electedAddr = m, addr
		return addr, true, nil
	}
	return "", false, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// logBadMember logs an unreadable leader znode once, not at every change.
func (d *detector) logBadMember(name string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.badMember != name {
		d.badMember = name
		log.Errorf("ZooKeeper %s: leader znode %s: %v", d.name(), name, err)
	}
}

// setLeader records the leader and signals a change. The first answer
// is announced after the leader is stored: a Fetch waiting for it reads
// the leader at once.
func (d *detector) setLeader(addr string, known bool) {
	defer d.answer.Do(func() { close(d.answered) })
	old, had := d.leader()
	if known == had && addr == old {
		return
	}
	if known {
		d.current.Store(&addr)
		log.Infof("ZooKeeper %s: the leading master is %s", d.name(), addr)
	} else {
		d.current.Store(nil)
		log.Warningf("ZooKeeper %s: no leading master registered", d.name())
	}
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// onEvent follows the session's state, logging an outage once at its start
// and once at its end rather than at every reconnection attempt. It runs on
// the library's goroutine and must not block.
func (d *detector) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		d.setConnected(true)
	case zk.StateDisconnected, zk.StateExpired:
		d.setConnected(false)
	case zk.StateAuthFailed:
		log.Errorf("ZooKeeper %s: credentials refused", d.name())
	}
}

// setConnected records the session's state and logs its changes.
func (d *detector) setConnected(up bool) {
	if d.connected.Swap(up) == up {
		return
	}
	select {
	case <-d.stopping:
		return // our own Close
	default:
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case up && d.outage:
		d.outage = false
		log.Infof("ZooKeeper %s: connected again", d.name())
	case !up && !d.outage:
		d.outage = true
		leader, ok := d.leader()
		if !ok {
			leader = "none"
		}
		log.Warningf("ZooKeeper %s: connection lost; keeping the last leader (%s), then the configured masters", d.name(), leader)
	}
}

// masterInfo is the part of Mesos's MasterInfo, as the masters write it to
// their znode in JSON, that locates the master. Its "ip" is a packed
// integer (pre-0.24 Mesos), superseded by address.ip.
type masterInfo struct {
	Address struct {
		Hostname string `json:"hostname"`
		IP       string `json:"ip"`
		Port     int    `json:"port"`
	} `json:"address"`
	Hostname string `json:"hostname"`
	Port     int    `json:"port"`
	PID      string `json:"pid"` // "master@10.0.0.1:5050"
}

// masterAddress returns a master's host:port from its MasterInfo: the
// address's IP, else the PID's host:port, else a hostname.
func masterAddress(data []byte) (string, error) {
	var info masterInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return "", fmt.Errorf("MasterInfo: %w", err)
	}
	port := info.Address.Port
	if port == 0 {
		port = info.Port
	}
	if info.Address.IP != "" && port > 0 {
		return net.JoinHostPort(info.Address.IP, strconv.Itoa(port)), nil
	}
	if _, hp, ok := strings.Cut(info.PID, "@"); ok && checkHostPort(hp) == nil {
		return hp, nil
	}
	for _, host := range []string{info.Address.Hostname, info.Hostname} {
		if host != "" && port > 0 {
			return net.JoinHostPort(host, strconv.Itoa(port)), nil
		}
	}
	return "", errors.New("MasterInfo: no address.ip, pid or hostname with a port")
}

// staticHosts hands the library the servers as configured, in turn. The
// library's default resolves the names once, at Connect, and fails when DNS
// does; dialing the names resolves them at each connection instead.
type staticHosts struct {
	mu      sync.Mutex
	servers []string
	next    int // the server Next returns
	tried   int // servers tried since the last connection
}

func (h *staticHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(servers) == 0 {
		return errors.New("no servers")
	}
	h.servers = servers
	return nil
}

func (h *staticHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server, and true each time all of them have been
// tried without a connection (the library then pauses a second).
func (h *staticHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[h.next]
	h.next = (h.next + 1) % len(h.servers)
	h.tried++
	retry := h.tried > len(h.servers)
	if retry {
		h.tried = 1 // s starts the next round
	}
	return s, retry
}

func (h *staticHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tried = 1
}

// handshakeDialer dials ZooKeeper with a bound on the session handshake's
// answer. The library waits ten times its receive timeout (over a minute
// here), and ZooKeeper 3.8.0, asked for a session in the moment between
// opening its port and serving, leaves the connection open unanswered: after
// a ZooKeeper restart the detector would be blind for that long. The bound
// is the Java client's: the session timeout shared among the servers.
func handshakeDialer(servers int) zk.Dialer {
	limit := max(zkSessionTimeout/time.Duration(servers), 2*time.Second)
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &handshakeConn{Conn: conn, limit: limit}, nil
	}
}

// handshakeConn caps the first read deadline set on it, the handshake's;
// the later ones, the library's receive timeouts, are kept.
type handshakeConn struct {
	net.Conn
	limit time.Duration
	done  atomic.Bool // the handshake's deadline was set
}

func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && !c.done.Swap(true) {
		if limit := time.Now().Add(c.limit); t.After(limit) {
			t = limit
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// zkLogger sends the library's messages, one per reconnection attempt, to
// the debug log; the detector logs outages itself.
type zkLogger struct{}

func (zkLogger) Printf(format string, args ...any) {
	log.Debugf("zookeeper client: "+format, args...)
}
