package clusterfirst

import (
	"math"
	"time"
	"unsafe"

	"github.com/schemadns/schemadns/plugin/pkg/listeners"
	"golang.org/x/sys/unix"
)

// The socket's view. The run queue is only part of a UDP query's wait:
// under overload most of it is spent in the listener's receive queue,
// which the runtime polls only when it has nothing else to run, and which
// the kernel empties by dropping what no longer fits. So the sampler also
// reads the listeners' queues: how full they are, and how many datagrams
// the kernel dropped at them (SO_MEMINFO). A queue that overflows while
// the process uses the CPU it may is a standing queue, proved in the time
// it took to fill.
//
// And past the bound the drops are made in the kernel: a classic BPF
// filter on each listener reads the question's name (bpf.go) and drops
// every other name's datagram, and a cluster name's at random with the
// cluster names' probability, before the server reads it. Read, parsed
// and dropped in the server, a query costs about 40% of an answer (make
// overload at 4× its saturation: reading and dropping 30,000 a second
// left the server 7,300 answers, where without clusterfirst, the kernel
// dropping the excess for free, it gave 18,000).

// socketStats is what SO_MEMINFO tells of a socket.
type socketStats struct {
	queued, limit uint32 // receive queue bytes, and the buffer's size
	drops         uint32 // datagrams dropped: buffer full, or the filter
}

// skMeminfoVars is the length of SO_MEMINFO's answer (SK_MEMINFO_VARS);
// queued, limit and drops are its words 0, 1 and 8.
const skMeminfoVars = 9

// readStats reads SO_MEMINFO of fd.
func readStats(fd int) (socketStats, bool) {
	var v [skMeminfoVars]uint32
	size := uint32(unsafe.Sizeof(v))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&size)), 0) // #nosec G103 -- getsockopt(2) takes pointers
	if errno != 0 || size < uint32(unsafe.Sizeof(v)) {
		return socketStats{}, false
	}
	return socketStats{queued: v[0], limit: v[1], drops: v[8]}, true
}

// adRandom is the classic BPF load offset of a random number:
// SKF_AD_OFF (-0x1000) plus SKF_AD_RANDOM (56), as a uint32.
const adRandom = 0xfffff000 + 56

// dropFilter is a classic BPF socket filter that drops a datagram when a
// random 32-bit number is at least keepBelow: with probability
// 1-keepBelow/2^32.
func dropFilter(keepBelow uint32) []unix.SockFilter {
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: adRandom},
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: 1, Jf: 0, K: keepBelow},
		{Code: unix.BPF_RET | unix.BPF_K, K: math.MaxUint32}, // keep it whole
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},              // drop
	}
}

// attachFilter puts prog on fd, replacing any filter it had.
func attachFilter(fd int, prog []unix.SockFilter) error {
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
		&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
}

// detachFilter takes the filter off fd; a socket without one is fine.
func detachFilter(fd int) {
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0)
}

// How the listeners are followed.
const (
	// findEvery: how often the listeners are looked for again (a reload
	// keeps them, multisocket or a restart may add or replace them).
	findEvery = 2 * time.Second
	// reassertEvery: how often the listeners are checked for the filter
	// in use, and it is attached again where it is gone. After a reload
	// the old instance's sampler, stopping, takes the filters off the
	// listeners it shares with the new one; the new one puts its own back
	// within this time.
	reassertEvery = 100 * time.Millisecond
	// filterSteps: the filter's drop probabilities are multiples of
	// 1/1024 (the other names' move by small steps at first).
	filterSteps = 1024
	// reattachEvery: how often a filter in use is replaced, at most, when
	// its probabilities moved. The kernel checks, compiles and maps in a
	// new program each time, some 0.7 ms on this machine's VM; replaced
	// at every 2 ms step, it took 4.9% of the server's CPU at 4× its
	// saturation (perf), where PIE updates its probability every 15 ms.
	reattachEvery = 50 * time.Millisecond
)

// udpQueues follows the server's UDP listeners: the process's listeners
// on the server's port.
type udpQueues struct {
	port    uint16
	socks   []listeners.Socket
	foundAt time.Duration
	// drops is the last sum of the listeners' drop counters, by inode (a
	// listener found again keeps its count; a new one starts from its own).
	drops map[uint64]uint32
	// keep is the filter attached, its keepBelow for the cluster names and
	// for the others (noFilter: none); filtered, the sockets it is on;
	// attachedAt, when it last was; checkedAt, when it was last found on.
	keep       [2]uint32
	filtered   []listeners.Socket
	attachedAt time.Duration
	checkedAt  time.Duration
	// zones are the cluster zones, which the filter tells apart when a
	// program for them fits the kernel's limit (classifies); prog is the
	// filter last attached.
	zones      []string
	classifies bool
	prog       []unix.SockFilter
	// find lists the process's listeners; tests replace it.
	find func() ([]listeners.Socket, error)
	// buffers is each listener's receive buffer unbounded, by inode: the
	// largest seen, which bounding never lowers and which it restores.
	buffers map[uint64]uint32
}

func newUDPQueues(port uint16, zones []string) *udpQueues {
	// foundAt a findEvery ago: the first reading looks for them.
	_, err := classifyingFilter(zones, 0, 0)
	return &udpQueues{port: port, zones: zones, classifies: err == nil, drops: map[uint64]uint32{},
		keep: noFilter, foundAt: -findEvery, find: listeners.Own, buffers: map[uint64]uint32{}}
}

// queueReading is one reading of the listeners.
type queueReading struct {
	// fill is the fullest receive queue, as a share of its buffer.
	fill float64
	// dropped is how many datagrams the kernel dropped at them since the
	// last reading.
	dropped uint64
	// listeners is how many were read.
	listeners int
}

// read reads every listener's queue, looking for them again first when
// it is time.
func (q *udpQueues) read(now time.Duration) queueReading {
	if q.port == 0 {
		return queueReading{}
	}
	if now-q.foundAt >= findEvery {
		q.refind(now)
	}
	var r queueReading
	for _, s := range q.socks {
		st, ok := readStats(s.FD)
		if !ok || !s.StillOurs() {
			continue
		}
		r.listeners++
		// The fill is of the whole buffer, bounded or not, so that the
		// controller's fillBound keeps its meaning through an episode.
		buffer := max(st.limit, q.buffers[s.Inode])
		q.buffers[s.Inode] = buffer
		if buffer > 0 {
			r.fill = max(r.fill, float64(st.queued)/float64(buffer))
		}
		if last, seen := q.drops[s.Inode]; seen {
			r.dropped += uint64(st.drops - last) // wraps as the kernel's counter does
		}
		q.drops[s.Inode] = st.drops
	}
	return r
}

// refind lists the listeners on the server's port again, forgetting the
// drop counts of those gone.
func (q *udpQueues) refind(now time.Duration) {
	q.foundAt = now
	all, err := q.find()
	if err != nil {
		return // keep the last list: a listener read through StillOurs only
	}
	q.socks = q.socks[:0]
	live := map[uint64]bool{}
	for _, s := range all {
		if s.Local.Port() == q.port {
			q.socks = append(q.socks, s)
			live[s.Inode] = true
		}
	}
	for inode := range q.drops {
		if !live[inode] {
			delete(q.drops, inode)
		}
	}
	for inode := range q.buffers {
		if !live[inode] {
			delete(q.buffers, inode)
		}
	}
}

// filter puts the drops in the kernel, on every listener: cluster names'
// datagrams at random with probability cluster, other names' with
// probability other (each rounded down to a step). A filter that tells
// the names apart stays on for the whole episode, so that it is not
// compiled again each time the odds touch 0; the one that drops at
// random only (zones too many for a program) goes on only while cluster
// names are dropped. It tells whether the drops are the kernel's (a
// filter is on every listener found) and whether the filter tells the
// names apart: then the handler drops nothing.
func (q *udpQueues) filter(cluster, other float64, episode bool, now time.Duration) (kernel, classifies bool) {
	keepCluster, clusterDrops := filterThreshold(cluster)
	keepOther, _ := filterThreshold(other)
	classifies = q.classifies
	on := clusterDrops || (episode && classifies)
	if !on || len(q.socks) == 0 {
		q.unfilter()
		return false, classifies
	}
	keep := [2]uint32{keepCluster, keepOther}
	if len(q.filtered) == len(q.socks) && (keep == q.keep || now-q.attachedAt < reattachEvery) {
		if now-q.checkedAt < reassertEvery || q.stillFiltered() {
			return true, classifies
		}
	}
	prog := q.program(keepCluster, keepOther)
	q.prog = prog
	// SO_ATTACH_FILTER replaces a filter at once: no moment without one.
	q.filtered = q.filtered[:0]
	for _, s := range q.socks {
		if !s.StillOurs() || attachFilter(s.FD, prog) != nil {
			continue
		}
		q.bound(s)
		q.filtered = append(q.filtered, s)
	}
	q.keep, q.attachedAt, q.checkedAt = keep, now, now
	return len(q.filtered) > 0 && len(q.filtered) == len(q.socks), classifies
}

// stillFiltered tells whether every listener filtered still has a filter
// of the program's length (SO_GET_FILTER with no room answers the length
// alone): asking costs a system call, where attaching again costs the
// kernel a check and a compile of the program.
func (q *udpQueues) stillFiltered() bool {
	for _, s := range q.filtered {
		if !s.StillOurs() || filterLen(s.FD) != len(q.prog) {
			return false
		}
	}
	return true
}

// filterLen is the length of the classic BPF filter on fd (0: none).
func filterLen(fd int) int {
	var size uint32
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_GET_FILTER,
		0, uintptr(unsafe.Pointer(&size)), 0) // #nosec G103 -- getsockopt(2) takes pointers
	if errno != 0 {
		return 0
	}
	return int(size)
}

// program is the filter for the probabilities: one that tells the cluster
// names from the others (bpf.go), or, where the zones make one too long,
// one that drops at random with the cluster names' probability (the
// handler drops the other names then, all of them by the time this one
// is used).
func (q *udpQueues) program(keepCluster, keepOther uint32) []unix.SockFilter {
	if !q.classifies {
		return dropFilter(keepCluster)
	}
	prog, err := classifyingFilter(q.zones, keepCluster, keepOther)
	if err != nil {
		return dropFilter(keepCluster) // not reached: classifies says it fits
	}
	return prog
}

// filterThreshold is the filter's keepBelow for a drop probability p,
// rounded down to a step; drops is false under one step.
func filterThreshold(p float64) (keepBelow uint32, drops bool) {
	steps := math.Floor(min(max(p, 0), 1) * filterSteps)
	return uint32(math.MaxUint32 - steps/filterSteps*math.MaxUint32), steps > 0
}

// filtering tells whether a filter is on.
func (q *udpQueues) filtering() bool { return len(q.filtered) > 0 }

// unfilter takes the filter off every listener it is on (still ours).
func (q *udpQueues) unfilter() {
	for _, s := range q.filtered {
		if s.StillOurs() {
			detachFilter(s.FD)
			q.unbound(s)
		}
	}
	q.filtered = q.filtered[:0]
	q.keep = noFilter
}

// noFilter is udpQueues.keep with no filter attached.
var noFilter = [2]uint32{math.MaxUint32, math.MaxUint32}

// While the filter is on, each listener's receive buffer is bounded to
// episodeBuffer of its own size (the kernel's default, 208 KiB, holds
// about 15 ms of a core's work; the bound about 3.7 ms), so that the
// kernel drops the cluster names' datagrams that the server would only
// answer late, at the tail, and the queue stays about as long as the
// bound: never empty while the load is over what the server can do
// (then the filter's odds drop the rest), never much longer. Without
// the bound the queue stood at the whole buffer whenever the runtime
// left the socket unread for 10 ms (it polls the network only when it
// has nothing else to run, or every 10 ms), and a query waited that
// long in the socket and as long again behind the burst read after it:
// a p99 of 26-37 ms at twice the server's saturation rate, against 6-10
// ms with the bound (make overload's cells, 2026-12-06). The bound comes
// off with the filter: a queue that does not stand is never cut short.
const episodeBuffer = 0.25

// minBuffer is the least a bounded buffer is given: the kernel's own
// minimum is about 2.3 KiB, and a buffer too small to hold a burst of a
// few queries would drop what a moment's wait answers.
const minBuffer = 16 << 10

// bound bounds s's receive buffer while the filter is on it. SO_RCVBUF
// takes half the size it sets (the kernel doubles it for its overhead).
func (q *udpQueues) bound(s listeners.Socket) {
	buffer := q.buffers[s.Inode]
	if buffer == 0 {
		return // never read: nothing to restore it to
	}
	bounded := max(uint32(float64(buffer)*episodeBuffer), minBuffer)
	if bounded < buffer {
		_ = unix.SetsockoptInt(s.FD, unix.SOL_SOCKET, unix.SO_RCVBUF, int(bounded/2))
	}
}

// unbound gives s its buffer back. SO_RCVBUFFORCE restores a buffer over
// net.core.rmem_max (which only a privileged process can have set); the
// plain option, where the process lacks CAP_NET_ADMIN, sets as much of it
// as the limit allows.
func (q *udpQueues) unbound(s listeners.Socket) {
	buffer := q.buffers[s.Inode]
	if now, err := unix.GetsockoptInt(s.FD, unix.SOL_SOCKET, unix.SO_RCVBUF); buffer == 0 || (err == nil && now >= int(buffer)) {
		return // never read, or not bounded (too small to be)
	}
	if unix.SetsockoptInt(s.FD, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, int(buffer/2)) != nil {
		_ = unix.SetsockoptInt(s.FD, unix.SOL_SOCKET, unix.SO_RCVBUF, int(buffer/2))
	}
}
