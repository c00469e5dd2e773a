package test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// TestCompressedAnswers checks name compression (RFC 1035 4.1.4) of large
// answers as clients receive them: over TCP a 300-endpoint answer, whole,
// in at most half the bytes of the same message uncompressed, from the
// plugin and again from the cache; over UDP with a 1232-byte EDNS buffer,
// truncated, but with more than twice the records that fit uncompressed.
func TestCompressedAnswers(t *testing.T) {
	e := newKsEnv(t)
	ns := e.namespace("compress")
	s := e.server(nil, "cache 30")

	const n = 300
	e.createService(ns, headlessService("big", servicePort("http", corev1.ProtocolTCP, 80)))
	var eps []endpoint
	var want []string
	name := ksSvc("big", ns)
	for i := range n {
		ip := fmt.Sprintf("10.244.%d.%d", 10+i/200, 1+i%200)
		eps = append(eps, endpoint{addr: ip})
		want = append(want, rrLine(name, "A", ip))
	}
	e.createSlice(ns, endpointSlice("big-1", "big", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}, eps...))
	expect(t, s, "tcp", name, dns.TypeA, answer(want...), settleTimeout)

	for _, try := range []string{"first", "cached"} {
		m, wire := rawExchange(t, "tcp", s.TCP, name, 0)
		plain := m.Copy()
		plain.Compress = false
		if len(m.Answer) != n || m.Truncated {
			t.Fatalf("%s A over TCP: %d records, TC %v; want all %d", try, len(m.Answer), m.Truncated, n)
		}
		if wire > plain.Len()/2 {
			t.Errorf("%s A over TCP: %d bytes, want at most half of the %d uncompressed", try, wire, plain.Len())
		}
	}

	m, wire := rawExchange(t, "udp", s.UDP, name, 1232)
	one := m.Answer[0].(*dns.A)
	fitPlain := (1232 - 12 - (len(name) + 6) - 11) / (len(one.Hdr.Name) + 1 + 14)
	if !m.Truncated || wire > 1232 || len(m.Answer) <= 2*fitPlain {
		t.Errorf("A over UDP, 1232-byte buffer: TC %v, %d bytes, %d records; want TC, at most 1232 bytes, more than %d records",
			m.Truncated, wire, len(m.Answer), 2*fitPlain)
	}
}

// rawExchange asks name's A records over network (with an EDNS0 buffer
// of size when it is not 0) and returns the reply and its size on the
// wire.
func rawExchange(t *testing.T, network, addr, name string, size uint16) (*dns.Msg, int) {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	if size > 0 {
		q.SetEdns0(size, false)
	}
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	co := &dns.Conn{Conn: c, UDPSize: 65535}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if err := co.WriteMsg(q); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65535)
	wire, err := co.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	if err := m.Unpack(buf[:wire]); err != nil {
		t.Fatal(err)
	}
	return m, wire
}
