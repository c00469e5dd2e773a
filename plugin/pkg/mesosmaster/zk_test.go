package mesosmaster

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schemadns/schemadns/internal/zookeeper"
)

// zkChange bounds how long a change in ZooKeeper takes to reach the client:
// the group is read every zkPoll, a killed server is noticed at once, and a
// reconnection waits a second between rounds.
const zkChange = 15 * time.Second

// registerMaster registers m in group the way a Mesos master does.
func registerMaster(t *testing.T, zk *zookeeper.Server, group string, m *fakeMaster) *zookeeper.Master {
	t.Helper()
	host, port, err := net.SplitHostPort(m.addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	member, err := zk.RegisterMaster(group, zookeeper.MasterInfo{IP: host, Port: p, Hostname: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	return member
}

// waitChanged waits for a value on the client's LeaderChanged.
func waitChanged(t *testing.T, c *Client) {
	t.Helper()
	select {
	case <-c.LeaderChanged():
	case <-time.After(zkChange):
		t.Fatalf("no leader change within %s", zkChange)
	}
}

// TestZKLeader: of two registered masters the earlier leads, even for the
// very first Fetch; when its znode goes, the other leads at once.
func TestZKLeader(t *testing.T) {
	zk := zookeeper.StartTest(t)
	logs := captureLog(t)
	a, b := serveMaster(t, leading), serveMaster(t, leading)
	memberA := registerMaster(t, zk, "/mesos", a)
	registerMaster(t, zk, "/mesos", b)
	zkBefore := len(goroutines(markZK))

	// b is configured: only ZooKeeper knows that a leads. Digest
	// credentials are accepted by ZooKeeper without ACLs to check.
	c := newClient(t, Config{Masters: []string{b.addr}, ZK: strings.Replace(zk.URL("/mesos"), "zk://", "zk://dns:pw@", 1)})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	res, err := c.Fetch(context.Background(), checkState)
	if err != nil {
		t.Fatal(err)
	}
	if res.Master != a.addr {
		t.Errorf("first Fetch from %s, want the ZooKeeper leader %s", res.Master, a.addr)
	}
	if leader, ok := c.Leader(); leader != a.addr || !ok || !c.ZKConnected() {
		t.Errorf("Leader, ZKConnected = %q %v, %v; want %s true, true", leader, ok, c.ZKConnected(), a.addr)
	}
	waitChanged(t, c) // the first naming of a

	// a fails over: its znode goes, and its server too.
	begin := time.Now()
	if err := memberA.Remove(); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, c)
	t.Logf("leader change seen in %s", time.Since(begin).Round(time.Millisecond))
	if leader, _ := c.Leader(); leader != b.addr {
		t.Errorf("Leader after the failover = %s, want %s", leader, b.addr)
	}
	a.srv.Close()
	res, err = c.Fetch(context.Background(), checkState)
	if err != nil || res.Master != b.addr || res.Failures != nil {
		t.Errorf("Fetch after the failover: %s, %v, %v; want %s without failures", res.Master, res.Failures, err, b.addr)
	}

	c.Stop()
	waitGoroutines(t, 0, markOwn, markConn)
	waitGoroutines(t, zkBefore, markZK)
	mustContainAll(t, "log", logs.String(), "the leading master is "+a.addr, "the leading master is "+b.addr)
}

// TestZKOutage: with ZooKeeper down the last leader is kept and logged once,
// the configured masters serve when that leader fails too, and the client
// reconnects when ZooKeeper is back.
func TestZKOutage(t *testing.T) {
	zk := zookeeper.StartTest(t)
	logs := captureLog(t)
	a, b := serveMaster(t, leading), serveMaster(t, leading)
	registerMaster(t, zk, "/mesos", a)
	c := newClient(t, Config{Masters: []string{b.addr}, ZK: zk.URL("/mesos"), Timeout: time.Second})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, c)

	if err := zk.Kill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, zkChange, "ZKConnected still true with ZooKeeper killed", func() bool { return !c.ZKConnected() })
	if leader, ok := c.Leader(); leader != a.addr || !ok {
		t.Errorf("Leader during the outage = %q %v, want %s kept", leader, ok, a.addr)
	}
	a.srv.Close()
	res, err := c.Fetch(context.Background(), checkState)
	if err != nil || res.Master != b.addr {
		t.Fatalf("Fetch during the outage: %s, %v; want %s", res.Master, err, b.addr)
	}
	if !errors.Is(res.Failures, syscall.ECONNREFUSED) || !strings.Contains(res.Failures.Error(), a.addr) {
		t.Errorf("Failures = %v, want %s refused", res.Failures, a.addr)
	}
	time.Sleep(3 * time.Second) // reconnection rounds, which must not log
	if n := strings.Count(logs.String(), "connection lost"); n != 1 {
		t.Errorf("%d outage lines, want 1:\n%s", n, logs)
	}

	begin := time.Now()
	if err := zk.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("ZooKeeper restarted in %s", time.Since(begin).Round(time.Millisecond))
	eventually(t, zkChange, "ZKConnected false with ZooKeeper back", c.ZKConnected)
	t.Logf("client reconnected %s after the restart began", time.Since(begin).Round(time.Millisecond))
	eventually(t, time.Second, "no reconnection line", func() bool { return strings.Contains(logs.String(), "connected again") })
	// The session survived the outage, and so did a's znode.
	if leader, ok := c.Leader(); leader != a.addr || !ok {
		t.Errorf("Leader after the outage = %q %v, want %s", leader, ok, a.addr)
	}
}

// TestZKUnreachable: a ZooKeeper that never answers delays only the first
// Fetch, by ZKTimeout, and is logged once.
func TestZKUnreachable(t *testing.T) {
	logs := captureLog(t)
	b := serveMaster(t, leading)
	c := newClient(t, Config{Masters: []string{b.addr}, ZK: "zk://" + refusedAddr(t) + "/mesos", ZKTimeout: 2 * time.Second})
	// ZKTimeout runs from Start, so the first Fetch is timed from there.
	begin := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if i > 0 {
			begin = time.Now()
		}
		res, err := c.Fetch(context.Background(), checkState)
		if err != nil || res.Master != b.addr {
			t.Fatalf("Fetch: %s, %v; want %s", res.Master, err, b.addr)
		}
		took := time.Since(begin)
		if i == 0 && (took < 2*time.Second || took > 10*time.Second) {
			t.Errorf("first Fetch took %s, want about ZKTimeout", took)
		}
		if i > 0 && took > time.Second {
			t.Errorf("Fetch %d took %s, want no wait after ZKTimeout", i, took)
		}
	}
	if n := strings.Count(logs.String(), "no answer within"); n != 1 {
		t.Errorf("%d lines about the unreachable ZooKeeper, want 1:\n%s", n, logs)
	}
	if c.ZKConnected() {
		t.Error("ZKConnected with nothing to connect to")
	}
	begin = time.Now()
	c.Stop()
	t.Logf("Stop took %s", time.Since(begin).Round(time.Millisecond))
	waitGoroutines(t, 0, markOwn, markConn, markZK)
}

// TestZKGroupLifecycle: no group znode yet, then a member with unreadable
// data, then a real master: the leader follows, and is never a guess.
func TestZKGroupLifecycle(t *testing.T) {
	zk := zookeeper.StartTest(t)
	logs := captureLog(t)
	c := newClient(t, Config{ZK: zk.URL("/mesos/prod")})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fetch(context.Background(), checkState); !errors.Is(err, ErrNoCandidates) {
		t.Errorf("Fetch with no master anywhere = %v, want %v", err, ErrNoCandidates)
	}

	bad, err := zk.Register("/mesos/prod", []byte(`{"hostname":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	m := serveMaster(t, leading)
	registerMaster(t, zk, "/mesos/prod", m)
	time.Sleep(3 * zkPoll) // the group read again, with both members
	if leader, ok := c.Leader(); ok {
		t.Errorf("Leader = %s while the leading znode is unreadable, want none", leader)
	}
	if err := bad.Remove(); err != nil {
		t.Fatal(err)
	}
	eventually(t, zkChange, "no leader after the bad member left", func() bool {
		leader, _ := c.Leader()
		return leader == m.addr
	})
	if n := strings.Count(logs.String(), "no address.ip"); n != 1 {
		t.Errorf("%d lines about the bad member, want 1:\n%s", n, logs)
	}
}

// TestHandshakeDeadline: the handshake's long read deadline is cut short,
// the later ones are kept.
func TestHandshakeDeadline(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	conn := &handshakeConn{Conn: client, limit: 100 * time.Millisecond}
	defer conn.Close()
	for i, want := range []time.Duration{100 * time.Millisecond, time.Hour} {
		if err := conn.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := conn.Read(make([]byte, 1)); done <- err }()
		select {
		case err := <-done:
			if want == time.Hour || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("read %d: %v, want a wait of %s", i, err, want)
			}
		case <-time.After(time.Second):
			if want != time.Hour {
				t.Errorf("read %d still waiting, want a timeout after %s", i, want)
			}
			conn.SetReadDeadline(time.Now()) // end the read
			<-done
		}
	}
}
