package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestRegisterAndRemove registers two masters and shows the znodes Mesos
// would write: ephemeral, sequential, in order, with the MasterInfo JSON.
func TestRegisterAndRemove(t *testing.T) {
	s := StartTest(t)
	first, err := s.RegisterMaster("/mesos/cluster", MasterInfo{IP: "10.0.0.1", Port: 5050, Hostname: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.RegisterMaster("/mesos/cluster", MasterInfo{IP: "10.0.0.2", Port: 5050})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Znode, "/mesos/cluster/json.info_") || first.Znode >= second.Znode {
		t.Errorf("znodes %s, %s: want json.info_ members in registration order", first.Znode, second.Znode)
	}

	conn := connect(t, s)
	data, stat, err := conn.Get(first.Znode)
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner == 0 {
		t.Errorf("%s is not ephemeral", first.Znode)
	}
	var info struct {
		Address struct {
			Hostname, IP string
			Port         int
		}
		PID string
		IP  uint32
	}
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatalf("MasterInfo %s: %v", data, err)
	}
	if info.Address.IP != "10.0.0.1" || info.Address.Port != 5050 || info.Address.Hostname != "m1" ||
		info.PID != "master@10.0.0.1:5050" || info.IP != 0x0100000a {
		t.Errorf("MasterInfo = %s", data)
	}

	if err := first.Remove(); err != nil {
		t.Fatal(err)
	}
	children, _, err := conn.Children("/mesos/cluster")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{strings.TrimPrefix(second.Znode, "/mesos/cluster/")}; !slices.Equal(children, want) {
		t.Errorf("children after Remove = %v, want %v", children, want)
	}
}

// TestKillRestartStop shows an outage and a recovery on the same port, and
// that Stop leaves no work dir behind.
func TestKillRestartStop(t *testing.T) {
	s := StartTest(t)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Kill", s.Addr())
	}
	begin := time.Now()
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %s", time.Since(begin).Round(time.Millisecond))
	if _, err := s.RegisterMaster("/mesos", MasterInfo{IP: "10.0.0.3", Port: 5050}); err != nil {
		t.Fatalf("register after Restart: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.WorkDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir %s after Stop: %v, want it gone", s.WorkDir, err)
	}
	if _, err := s.RegisterMaster("/mesos", MasterInfo{IP: "10.0.0.3", Port: 5050}); !errors.Is(err, errStopped) {
		t.Errorf("register after Stop: %v, want %v", err, errStopped)
	}
}

// TestMissingJava is the message a machine without java gets.
func TestMissingJava(t *testing.T) {
	_, err := Start(context.Background(), Options{Java: "/nonexistent/java"})
	if err == nil || !strings.Contains(err.Error(), "hack/deps.sh") {
		t.Errorf("Start without java: %v, want a hint at hack/deps.sh", err)
	}
}

func connect(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := s.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}
