package zookeeper

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// MasterInfo is what a stand-in master publishes about itself.
type MasterInfo struct {
	ID       string // default "master-<ip>-<port>"
	Hostname string // default IP
	IP       string // an IPv4 address
	Port     int
	Version  string // default "1.11.0"
}

// JSON is info as Mesos writes it to its znode (MasterInfo in JSON, with the
// packed IPv4 "ip" of Mesos before 0.24 beside "address").
func (info MasterInfo) JSON() []byte {
	host := info.Hostname
	if host == "" {
		host = info.IP
	}
	id := info.ID
	if id == "" {
		id = fmt.Sprintf("master-%s-%d", info.IP, info.Port)
	}
	version := info.Version
	if version == "" {
		version = "1.11.0"
	}
	type address struct {
		Hostname string `json:"hostname"`
		IP       string `json:"ip"`
		Port     int    `json:"port"`
	}
	type capability struct {
		Type string `json:"type"`
	}
	b, err := json.Marshal(struct {
		Address      address      `json:"address"`
		Capabilities []capability `json:"capabilities"`
		Hostname     string       `json:"hostname"`
		ID           string       `json:"id"`
		IP           uint32       `json:"ip"`
		PID          string       `json:"pid"`
		Port         int          `json:"port"`
		Version      string       `json:"version"`
	}{
		Address:      address{host, info.IP, info.Port},
		Capabilities: []capability{{"AGENT_UPDATE"}, {"AGENT_DRAINING"}},
		Hostname:     host,
		ID:           id,
		IP:           packedIPv4(info.IP),
		PID:          "master@" + net.JoinHostPort(info.IP, strconv.Itoa(info.Port)),
		Port:         info.Port,
		Version:      version,
	})
	if err != nil {
		panic(err) // plain strings and numbers always marshal
	}
	return b
}

// packedIPv4 is the IPv4 address as Mesos packs it: the four bytes in
// network order read as a little-endian integer (the x86 masters' order).
func packedIPv4(s string) uint32 {
	ip := net.ParseIP(s).To4()
	if ip == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(ip)
}

// Master is a stand-in master's membership of the election group: its own
// session and its ephemeral znode.
type Master struct {
	// Znode is the full path of its json.info_ znode.
	Znode string
	conn  *zk.Conn
}

// memberPrefix is the name Mesos gives its znodes in the group, before the
// sequence number ZooKeeper appends.
const memberPrefix = "json.info_"

// RegisterMaster registers info in the group znode (created if missing) as
// a master does when it joins the election: the earliest registered leads.
func (s *Server) RegisterMaster(group string, info MasterInfo) (*Master, error) {
	return s.Register(group, info.JSON())
}

// Register registers a member of group holding data as is, for a test of
// what a reader makes of unexpected data.
func (s *Server) Register(group string, data []byte) (*Master, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, errStopped
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ReadyTimeout)
	defer cancel()
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: register in %s: %w", group, err)
	}
	m := &Master{conn: conn}
	if err := createParents(conn, group); err != nil {
		conn.Close()
		return nil, fmt.Errorf("zookeeper: register in %s: %w", group, err)
	}
	m.Znode, err = conn.Create(group+"/"+memberPrefix, data, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("zookeeper: register in %s: %w", group, err)
	}
	s.masters = append(s.masters, m)
	return m, nil
}

// createParents creates path and its parents as persistent znodes, as Mesos
// does for its --zk path.
func createParents(conn *zk.Conn, path string) error {
	at := ""
	for part := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		at += "/" + part
		_, err := conn.Create(at, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", at, err)
		}
	}
	return nil
}

// removeTimeout bounds Remove's delete, which waits for the server while it
// is down.
const removeTimeout = 10 * time.Second

// Remove deletes the master's znode and ends its session, as a master that
// exits does; the next member becomes the leader. Deleting is at once
// where a session's end would take the session timeout to be noticed.
func (m *Master) Remove() error {
	defer m.conn.Close()
	done := make(chan error, 1)
	go func() { done <- m.conn.Delete(m.Znode, -1) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("zookeeper: remove %s: %w", m.Znode, err)
		}
		return nil
	case <-time.After(removeTimeout):
		return fmt.Errorf("zookeeper: remove %s: no answer in %s", m.Znode, removeTimeout)
	}
}
