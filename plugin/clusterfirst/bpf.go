package clusterfirst

import (
	"errors"
	"fmt"
	"math"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// The kernel's drop filter tells the cluster names from the others. Past
// the bound every other name is dropped, and the server spends about 40%
// of an answer's work reading and dropping each (make overload at 4× its
// saturation with a silent upstream, a fifth of the load other names: the
// cluster names kept 0.84 to 0.93 of what the server without clusterfirst
// answered, the kernel dropping its excess for free). So the filter reads
// the question's name itself and drops the other names with their own
// probability, the cluster names with theirs, before the server reads
// either. A socket filter on a UDP socket sees the datagram from its UDP
// header on; the DNS message begins 8 bytes in.
//
// A datagram the filter cannot read as a query with one question whose
// name ends within the packet, in at most maxFilterLabels labels without
// compression, passes: the server reads it and decides as before. So the
// filter is only ever a cheaper place for a drop the handler would make.

// Offsets in the datagram as the filter sees it.
const (
	udpHeader   = 8
	dnsFlags    = udpHeader + 2  // QR, opcode, AA, TC, RD
	dnsQDCount  = udpHeader + 4  // questions
	dnsQuestion = udpHeader + 12 // the question's name
)

// maxFilterLabels is how many labels the filter follows; a name with more
// passes unread. A service's SRV name has seven, an IPv6 reverse name 34.
const maxFilterLabels = 40

// maxFilterLen is the kernel's limit on a classic BPF program
// (BPF_MAXINSNS).
const maxFilterLen = 4096

// errFilterTooLong: the zones make a program the kernel would refuse.
var errFilterTooLong = errors.New("the cluster zones make a socket filter over the kernel's 4096 instructions")

// Where the classification goes: the labels of the program's tails.
const (
	toCluster = "cluster"
	toOther   = "other"
	toPass    = "pass"
)

// scratchEnd is the scratch memory word that keeps the name's end (the
// offset of its root label) while each zone is compared.
const scratchEnd = 0

// classifyingFilter is a filter that drops the datagrams of cluster names
// when a random 32-bit number is at least keepCluster, those of other
// names when one is at least keepOther, and passes the rest. zones are
// the cluster zones, lower case and fully qualified; the root zone makes
// every name a cluster name.
func classifyingFilter(zones []string, keepCluster, keepOther uint32) ([]unix.SockFilter, error) {
	a, err := classifier(zones)
	if err != nil {
		return nil, err
	}
	a.label(toCluster)
	a.randomDrop(keepCluster)
	a.label(toOther)
	a.randomDrop(keepOther)
	a.label(toPass)
	a.ret(math.MaxUint32)
	return a.assemble()
}

// classifier is the program up to its tails: it jumps to toCluster,
// toOther or toPass.
func classifier(zones []string) (*bpfAsm, error) {
	wires := make([][]byte, 0, len(zones))
	for _, z := range zones {
		if z == "." {
			a := &bpfAsm{}
			a.jump(toCluster)
			return a, nil
		}
		buf := make([]byte, 256)
		n, err := dns.PackDomainName(dns.Fqdn(z), buf, 0, nil, false)
		if err != nil {
			return nil, fmt.Errorf("cluster zone %q: %w", z, err)
		}
		wires = append(wires, buf[:n])
	}
	a := &bpfAsm{}
	a.queryHeader()
	a.findNameEnd()
	for i, w := range wires {
		a.compareSuffix(w, fmt.Sprintf("zone%d", i+1))
		a.label(fmt.Sprintf("zone%d", i+1))
	}
	a.jump(toOther)
	return a, nil
}

// queryHeader passes all but a query (QR 0, opcode 0) with one question.
func (a *bpfAsm) queryHeader() {
	a.op(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0)
	a.jumpUnless(unix.BPF_JGE|unix.BPF_K, dnsQuestion+1, toPass)
	a.op(unix.BPF_LD|unix.BPF_H|unix.BPF_ABS, dnsQDCount)
	a.jumpUnless(unix.BPF_JEQ|unix.BPF_K, 1, toPass)
	a.op(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, dnsFlags)
	a.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf8)
	a.jumpUnless(unix.BPF_JEQ|unix.BPF_K, 0, toPass)
}

// findNameEnd walks the question's labels, leaving the offset of its root
// label in X and in scratch memory; a name that leaves the packet, uses
// compression or has too many labels passes.
func (a *bpfAsm) findNameEnd() {
	a.op(unix.BPF_LDX|unix.BPF_W|unix.BPF_IMM, dnsQuestion)
	for range maxFilterLabels {
		a.op(unix.BPF_LD|unix.BPF_W|unix.BPF_LEN, 0)
		a.jumpUnless(unix.BPF_JGT|unix.BPF_X, 0, toPass) // the length byte is in the packet
		a.op(unix.BPF_LD|unix.BPF_B|unix.BPF_IND, 0)
		a.jumpIf(unix.BPF_JEQ|unix.BPF_K, 0, "end")
		a.jumpIf(unix.BPF_JGE|unix.BPF_K, 64, toPass) // a pointer or an unknown label type
		a.op(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_X, 0)
		a.op(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_K, 1)
		a.op(unix.BPF_MISC|unix.BPF_TAX, 0)
	}
	a.jump(toPass)
	a.label("end")
	a.op(unix.BPF_STX, scratchEnd)
}

// compareSuffix jumps to toCluster when the name ends in wire (a zone's
// wire form, its root label included), ASCII letters in any case, and
// on to next otherwise. It expects the name's end in scratch memory.
func (a *bpfAsm) compareSuffix(wire []byte, next string) {
	body := len(wire) - 1 // the root label is the name's end already
	if body == 0 {
		a.jump(toCluster)
		return
	}
	// The suffix begins body bytes before the end, within the name.
	a.op(unix.BPF_LD|unix.BPF_MEM, scratchEnd)
	a.jumpUnless(unix.BPF_JGE|unix.BPF_K, uint32(dnsQuestion+body), next)
	a.op(unix.BPF_ALU|unix.BPF_SUB|unix.BPF_K, uint32(body))
	a.op(unix.BPF_MISC|unix.BPF_TAX, 0)
	for at := 0; at < body; at += 4 {
		size, value, fold := suffixWord(wire[at:body])
		a.op(unix.BPF_LD|size|unix.BPF_IND, uint32(at))
		if fold != 0 {
			a.op(unix.BPF_ALU|unix.BPF_OR|unix.BPF_K, fold)
		}
		a.jumpUnless(unix.BPF_JEQ|unix.BPF_K, value, next)
	}
	a.jump(toCluster)
}

// suffixWord is the next compare of a zone's bytes: up to four of them,
// big-endian as the filter loads them, and the bits to set first so that
// a letter matches in either case (b|0x20 is a lower-case letter only for
// that letter in either case; a length byte, a digit or a dash must match
// exactly).
func suffixWord(rest []byte) (size uint16, value, fold uint32) {
	n := min(len(rest), 4)
	if n == 3 {
		n = 2
	}
	switch n {
	case 4:
		size = unix.BPF_W
	case 2:
		size = unix.BPF_H
	default:
		size = unix.BPF_B
	}
	for _, b := range rest[:n] {
		value, fold = value<<8|uint32(b), fold<<8
		if b >= 'a' && b <= 'z' {
			fold |= 0x20
		}
	}
	return size, value, fold
}

// randomDrop drops the datagram when a random number is at least keep.
func (a *bpfAsm) randomDrop(keep uint32) {
	a.op(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, adRandom)
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: 1, K: keep})
	a.ret(math.MaxUint32) // keep it whole
	a.ret(0)              // drop
}

// bpfAsm assembles a classic BPF program with named jump targets. A
// conditional jump only skips the one instruction after it, an
// unconditional jump (32-bit offset) to the target: so a target can be
// any distance ahead.
type bpfAsm struct {
	prog   []unix.SockFilter
	labels map[string]int
	jumps  map[int]string // the index of a ja, and its target
}

func (a *bpfAsm) op(code uint16, k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) ret(k uint32) { a.op(unix.BPF_RET|unix.BPF_K, k) }

// jump goes to target.
func (a *bpfAsm) jump(target string) {
	if a.jumps == nil {
		a.jumps = map[int]string{}
	}
	a.jumps[len(a.prog)] = target
	a.op(unix.BPF_JMP|unix.BPF_JA, 0)
}

// jumpIf goes to target when the comparison (a BPF_JMP condition and
// source) holds.
func (a *bpfAsm) jumpIf(cond uint16, k uint32, target string) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_JMP | cond, Jt: 0, Jf: 1, K: k})
	a.jump(target)
}

// jumpUnless goes to target when the comparison fails.
func (a *bpfAsm) jumpUnless(cond uint16, k uint32, target string) {
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_JMP | cond, Jt: 1, Jf: 0, K: k})
	a.jump(target)
}

// label names the next instruction.
func (a *bpfAsm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.prog)
}

// assemble resolves the jumps.
func (a *bpfAsm) assemble() ([]unix.SockFilter, error) {
	if len(a.prog) > maxFilterLen {
		return nil, errFilterTooLong
	}
	for at, target := range a.jumps {
		to, ok := a.labels[target]
		if !ok || to <= at {
			return nil, fmt.Errorf("socket filter: jump to %q from %d: not ahead", target, at)
		}
		a.prog[at].K = uint32(to - at - 1)
	}
	return a.prog, nil
}
