package clusterfirst

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"golang.org/x/net/bpf"
)

var testZones = []string{"cluster.local.", "10.in-addr.arpa.", "ip6.arpa."}

// packQuery is a query for name (A), with an EDNS0 OPT record carrying a
// cookie when edns is set, as dig sends it.
func packQuery(t testing.TB, name string, edns bool) []byte {
	t.Helper()
	m := new(dns.Msg).SetQuestion(name, dns.TypeA)
	if edns {
		m.SetEdns0(1232, false)
		opt := m.IsEdns0()
		opt.Option = append(opt.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// Classes as the test program returns them.
const (
	classIsCluster = 1
	classIsOther   = 2
	classIsPass    = 3
)

// classes runs the classifier for zones on a DNS message in the
// x/net/bpf virtual machine, as the kernel runs it on a UDP datagram
// (its 8-byte UDP header first), and tells where it went.
func classes(t testing.TB, zones []string) func(msg []byte) int {
	t.Helper()
	a, err := classifier(zones)
	if err != nil {
		t.Fatal(err)
	}
	for class, label := range map[uint32]string{classIsCluster: toCluster, classIsOther: toOther, classIsPass: toPass} {
		a.label(label)
		a.ret(class)
	}
	prog, err := a.assemble()
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]bpf.Instruction, len(prog))
	for i, ins := range prog {
		raw[i] = bpf.RawInstruction{Op: ins.Code, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}.Disassemble()
	}
	vm, err := bpf.NewVM(raw)
	if err != nil {
		t.Fatalf("the program does not load: %v", err)
	}
	return func(msg []byte) int {
		n, err := vm.Run(append(make([]byte, udpHeader), msg...))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

func TestFilterClassifies(t *testing.T) {
	classOf := classes(t, testZones)
	long := strings.Repeat("a.", maxFilterLabels) + "cluster.local."
	query := func(name string) []byte { return packQuery(t, name, false) }
	response := query("web.default.svc.cluster.local.")
	response[2] |= 0x80
	twoQuestions := query("web.default.svc.cluster.local.")
	binary.BigEndian.PutUint16(twoQuestions[4:], 2)
	// A name that points back into the header: the filter does not follow.
	pointer := append(query("a.")[:12], 0xc0, 0x0c, 0, 1, 0, 1)
	for _, c := range []struct {
		what string
		msg  []byte
		want int
	}{
		{"a service", query("web.default.svc.cluster.local."), classIsCluster},
		{"the zone's apex", query("cluster.local."), classIsCluster},
		{"in upper case", query("WEB.Default.SVC.Cluster.LOCAL."), classIsCluster},
		{"with EDNS0 and a cookie", packQuery(t, "web.default.svc.cluster.local.", true), classIsCluster},
		{"a reverse name", query("1.0.96.10.in-addr.arpa."), classIsCluster},
		{"an IPv6 reverse name", query("b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa."), classIsCluster},
		{"an external name", query("www.example.com."), classIsOther},
		{"an external name with EDNS0", packQuery(t, "www.example.com.", true), classIsOther},
		{"the zone under another", query("cluster.local.example.com."), classIsOther},
		{"a longer last label", query("web.xcluster.local."), classIsOther},
		{"another reverse zone", query("1.0.168.192.in-addr.arpa."), classIsOther},
		{"the root", query("."), classIsOther},
		{"a response", response, classIsPass},
		{"two questions", twoQuestions, classIsPass},
		{"a compressed name", pointer, classIsPass},
		{"more labels than it follows", query(long), classIsPass},
		{"a cut name", query("web.default.svc.cluster.local.")[:20], classIsPass},
		{"a header only", query("a.")[:12], classIsPass},
		{"nothing", nil, classIsPass},
	} {
		if got := classOf(c.msg); got != c.want {
			t.Errorf("%s: class %d, want %d", c.what, got, c.want)
		}
	}
	if got := classes(t, []string{"."})(query("www.example.com.")); got != classIsCluster {
		t.Errorf("the root zone: an external name's class %d, want cluster", got)
	}
}

// FuzzFilterClassifies: on any datagram, the filter's class of a query
// agrees with the handler's, for names written without escapes: a name
// the filter takes for another is never one the handler would answer as a
// cluster name. (A name with a label holding a dot or a length byte may
// be read differently, and is dropped or kept by odds a little off.)
func FuzzFilterClassifies(f *testing.F) {
	for _, name := range []string{"web.default.svc.cluster.local.", "www.example.com.", "cluster.local.", "1.0.96.10.in-addr.arpa.", "A.B.IP6.ARPA."} {
		f.Add(packQuery(f, name, false))
		f.Add(packQuery(f, name, true))
	}
	classOf := classes(f, testZones)
	cf := &Clusterfirst{Zones: testZones}
	f.Fuzz(func(t *testing.T, msg []byte) {
		got := classOf(msg)
		if got != classIsCluster && got != classIsOther && got != classIsPass {
			t.Fatalf("class %d", got)
		}
		m := new(dns.Msg)
		unread := m.Unpack(msg) != nil || len(m.Question) != 1 || m.Response || m.Opcode != dns.OpcodeQuery
		if unread || got == classIsPass || strings.ContainsRune(m.Question[0].Name, '\\') {
			return // the server reads it; or a name with escapes
		}
		if want := map[bool]int{true: classIsCluster, false: classIsOther}[cf.inCluster(m)]; got != want {
			t.Errorf("%q: the filter's class %d, the handler's %d", m.Question[0].Name, got, want)
		}
	})
}

func TestFilterTooLong(t *testing.T) {
	zones := make([]string, 100)
	for i := range zones {
		zones[i] = strings.Repeat("abcdefghij.", 20) + "example."
	}
	if _, err := classifyingFilter(zones, 0, 0); err == nil {
		t.Fatal("100 zones of 200 bytes: a program the kernel would take")
	}
	// The listeners then get the filter that drops at random.
	q := newUDPQueues(53, zones)
	if prog := q.program(math.MaxUint32/2, 0); len(prog) != len(dropFilter(0)) {
		t.Errorf("a program of %d instructions, want the random one", len(prog))
	}
}

// TestKernelFilterTellsClusterFromOther: on a real listener, with the
// other names all dropped and the cluster names all kept, every cluster
// query comes through, no other one does, and what the filter cannot
// read comes through for the server to decide.
func TestKernelFilterTellsClusterFromOther(t *testing.T) {
	conn, s := listenUDP(t, 4<<20)
	prog, err := classifyingFilter(testZones, math.MaxUint32, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := attachFilter(s.FD, prog); err != nil {
		t.Fatalf("the kernel refused the filter: %v", err)
	}
	cluster := packQuery(t, "Web.Default.svc.cluster.local.", true)
	other := packQuery(t, "www.example.com.", false)
	unread := packQuery(t, strings.Repeat("a.", maxFilterLabels)+"example.com.", false)
	for _, c := range []struct {
		what string
		msg  []byte
		want int
	}{{"cluster", cluster, 50}, {"other", other, 0}, {"unread", unread, 50}} {
		sendRaw(t, conn.LocalAddr(), 50, c.msg)
		if got := receive(conn); got != c.want {
			t.Errorf("%s queries: %d of 50 came through, want %d", c.what, got, c.want)
		}
	}
	if st, ok := readStats(s.FD); !ok || st.drops != 50 {
		t.Errorf("the listener counts %d drops, want the 50 other queries", st.drops)
	}
}
