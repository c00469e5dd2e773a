package handover

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
)

// The probe: a process about to hand a listener over asks the listener's
// own address (so the kernel delivers the question to the sockets of the
// group, not to a process of its choosing)
//
//	<nonce>.<tag>.handover.invalid. IN TXT
//
// nonce: 16 random bytes in hex; tag: the first 16 bytes of
// HMAC-SHA256(key, probeLabel || nonce) in hex, so that only a holder of
// the key gets an answer. A successor answers with one TXT record of two
// strings, "inodes=<i>,<j>" (its own unconnected listeners on that
// address, from /proc/self/fd) and "mac=<HMAC-SHA256(key, answerLabel ||
// nonce || the first string)>". The asker trusts only the inodes an answer
// names: a socket of the group no proven answer names (a stranger's, or
// one that relays probes to the others) keeps the listener from being
// handed over. The key itself never leaves the process.
const (
	probeZone   = "handover.invalid."
	probeLabel  = "schemadns handover probe v1\x00"
	answerLabel = "schemadns handover answer v1\x00"
	nonceSize   = 16
	tagSize     = 16
)

// Handover is the handler: it answers probes, and passes every other
// query on.
type Handover struct {
	Next plugin.Handler
	// key is nil when none could be loaded: then it never hands over and
	// answers no probe.
	key []byte
	// stopping: a process shutting down is nobody's successor.
	stopping atomic.Bool
	// listeners names this process's unconnected listeners on an address,
	// the inodes an answer vouches for (ownInodes; tests give their own,
	// since every test socket lives in one process).
	listeners func(netip.AddrPort) []uint64
}

// Name implements plugin.Handler.
func (h *Handover) Name() string { return pluginName }

// ServeDNS implements plugin.Handler.
func (h *Handover) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || !dns.IsSubDomain(probeZone, r.Question[0].Name) {
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}
	m := new(dns.Msg)
	m.SetReply(r)
	if txt := h.answer(w, r.Question[0]); txt != nil {
		m.Authoritative = true
		m.Answer = []dns.RR{txt}
	} else {
		m.Rcode = dns.RcodeRefused
	}
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// answer is the proof for a probe, or nil for anything that is not a
// valid probe from a key holder to a successor over UDP.
func (h *Handover) answer(w dns.ResponseWriter, q dns.Question) *dns.TXT {
	if h.key == nil || h.stopping.Load() || q.Qtype != dns.TypeTXT {
		return nil
	}
	local, ok := w.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil
	}
	nonce, ok := parseProbe(h.key, q.Name)
	if !ok {
		return nil
	}
	inodes := h.listeners(local.AddrPort())
	if len(inodes) == 0 {
		return nil
	}
	claim := "inodes=" + joinInodes(inodes)
	return &dns.TXT{
		Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET},
		Txt: []string{claim, "mac=" + hex.EncodeToString(mac(h.key, answerLabel, nonce, claim))},
	}
}

// ownInodes lists this process's unconnected listeners on addr.
func ownInodes(addr netip.AddrPort) []uint64 {
	socks, err := ownSockets()
	if err != nil {
		return nil
	}
	want := netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	var out []uint64
	for _, s := range socks {
		if s.Local == want {
			out = append(out, s.Inode)
		}
	}
	return out
}

func mac(key []byte, label string, nonce []byte, extra string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	m.Write(nonce)
	m.Write([]byte(extra))
	return m.Sum(nil)
}

func probeName(key, nonce []byte) string {
	return hex.EncodeToString(nonce) + "." + hex.EncodeToString(mac(key, probeLabel, nonce, "")[:tagSize]) + "." + probeZone
}

// parseProbe checks a probe's tag and returns its nonce.
func parseProbe(key []byte, name string) ([]byte, bool) {
	labels := dns.SplitDomainName(name)
	if len(labels) != 4 {
		return nil, false
	}
	nonce, err1 := hex.DecodeString(labels[0])
	tag, err2 := hex.DecodeString(labels[1])
	if err1 != nil || err2 != nil || len(nonce) != nonceSize || len(tag) != tagSize {
		return nil, false
	}
	return nonce, hmac.Equal(tag, mac(key, probeLabel, nonce, "")[:tagSize])
}

func joinInodes(inodes []uint64) string {
	s := make([]string, len(inodes))
	for i, n := range inodes {
		s[i] = strconv.FormatUint(n, 10)
	}
	return strings.Join(s, ",")
}

// verifyAnswer returns the inodes a reply to the probe with nonce proves
// to be a key holder's.
func verifyAnswer(key, nonce []byte, m *dns.Msg) []uint64 {
	if m == nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
		return nil
	}
	txt, ok := m.Answer[0].(*dns.TXT)
	if !ok || len(txt.Txt) != 2 || !strings.HasPrefix(txt.Txt[0], "inodes=") || !strings.HasPrefix(txt.Txt[1], "mac=") {
		return nil
	}
	got, err := hex.DecodeString(strings.TrimPrefix(txt.Txt[1], "mac="))
	if err != nil || !hmac.Equal(got, mac(key, answerLabel, nonce, txt.Txt[0])) {
		return nil
	}
	var out []uint64
	for _, f := range strings.Split(strings.TrimPrefix(txt.Txt[0], "inodes="), ",") {
		if n, err := strconv.ParseUint(f, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// How a round of probes is sent: each from a socket of its own (a source
// port of its own, so the kernel's hash spreads them over the group), all
// at once, with one deadline. With our listener and one successor in the
// group, all 16 land on ours with odds 2^-16, and the next round tries
// again.
const (
	probesPerRound = 16
	probeTimeout   = 250 * time.Millisecond
)

// proven sends a round of probes to addr and returns the inodes the
// answers prove, stopping early once every inode of want is proven.
func proven(ctx context.Context, key []byte, addr netip.AddrPort, want []uint64) map[uint64]bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	target := probeTarget(addr)
	type sent struct {
		c     *net.UDPConn
		nonce []byte
	}
	var round []sent
	defer func() {
		for _, s := range round {
			s.c.Close()
		}
	}()
	for range probesPerRound {
		c, nonce, err := sendProbe(key, target)
		if err != nil {
			log.Warningf("probe of %s: %v", addr, err)
			break
		}
		round = append(round, sent{c, nonce})
	}
	// One reader each, all at once: a read past the deadline fails even
	// with a reply queued, so they cannot take turns.
	deadline, _ := ctx.Deadline()
	replies := make(chan []uint64, len(round))
	for _, s := range round {
		go func() { replies <- readAnswer(s.c, deadline, key, s.nonce) }()
	}
	out := map[uint64]bool{}
	for range round {
		for _, n := range <-replies {
			out[n] = true
		}
		if !slices.ContainsFunc(want, func(n uint64) bool { return !out[n] }) {
			break // the deferred Close ends the readers still waiting
		}
	}
	return out
}

// probeTarget is where a probe for a listener on addr goes: the address
// itself, or the loopback address of a wildcard listener.
func probeTarget(addr netip.AddrPort) netip.AddrPort {
	a := addr.Addr()
	switch {
	case a == netip.IPv4Unspecified():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a == netip.IPv6Unspecified():
		a = netip.IPv6Loopback()
	}
	return netip.AddrPortFrom(a, addr.Port())
}

func sendProbe(key []byte, target netip.AddrPort) (*net.UDPConn, []byte, error) {
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, err
	}
	q := new(dns.Msg)
	q.SetQuestion(probeName(key, nonce), dns.TypeTXT)
	b, err := q.Pack()
	if err != nil {
		return nil, nil, err
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(target))
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.Write(b); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, nonce, nil
}

// readAnswer waits until deadline for the reply to one probe.
func readAnswer(c *net.UDPConn, deadline time.Time, key, nonce []byte) []uint64 {
	buf := make([]byte, dns.MinMsgSize)
	for {
		c.SetReadDeadline(deadline)
		n, err := c.Read(buf)
		if err != nil {
			return nil
		}
		m := new(dns.Msg)
		if m.Unpack(buf[:n]) != nil {
			continue
		}
		if got := verifyAnswer(key, nonce, m); got != nil {
			return got
		}
		if m.Rcode == dns.RcodeRefused {
			return nil // our own listener, shutting down
		}
	}
}
