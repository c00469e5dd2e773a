package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// checkCount is the model check's tally for one run.
type checkCount struct {
	Answers   int // A answers compared with the states written
	Wrong     int // matching no state written for the name (torn, or an rcode other than NOERROR)
	Back      int // a state older than one this checker had already seen for the name
	Errors    int // queries without an answer
	Truncated int // UDP answers with TC set, asked again over TCP
	Spot      int // SRV and PTR answers checked after the run
	SpotWrong int
	Examples  []string
}

// checker asks a server for the changed names during the absorption, at a
// modest rate, and judges each answer against the states written.
type checker struct {
	m    *model
	mu   sync.Mutex
	c    checkCount
	seen map[*name]int // the newest state seen per name
}

// checkWorkers are the checker's goroutines, each with its own socket:
// enough for the rate asked while a server busy absorbing answers in tens
// of milliseconds.
const checkWorkers = 16

func (ch *checker) run(ctx context.Context, addr string, rate int) {
	ch.mu.Lock()
	ch.seen = map[*name]int{}
	ch.mu.Unlock()
	names := ch.m.changed
	r := rand.New(rand.NewPCG(7, 7))
	var pick sync.Mutex
	dnsload.RoundRobin(ctx, addr, rate, checkWorkers, func(q *dnsload.Querier, _ int) {
		pick.Lock()
		n := names[r.IntN(len(names))]
		pick.Unlock()
		ch.mu.Lock()
		floor := ch.seen[n]
		ch.mu.Unlock()
		resp, tc, err := q.Ask(n.fqdn, dns.TypeA)
		if ctx.Err() != nil { // the answer may be cut short by the end
			return
		}
		ch.judge(n, resp, tc, err, floor)
	})
}

func (ch *checker) judge(n *name, r *dns.Msg, tc bool, err error, floor int) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if tc {
		ch.c.Truncated++
	}
	if err != nil {
		ch.c.Errors++
		return
	}
	ch.c.Answers++
	v := n.judge(r)
	switch {
	case v.seq < 0:
		ch.c.Wrong++
		ch.example(fmt.Sprintf("%s A: %s", n.fqdn, v.why))
	case v.seq < floor:
		ch.c.Back++
		ch.example(fmt.Sprintf("%s A: state %d after state %d had been seen", n.fqdn, v.seq, floor))
	default:
		ch.seen[n] = max(ch.seen[n], v.seq)
	}
}

func (ch *checker) example(s string) {
	if len(ch.c.Examples) < 5 {
		ch.c.Examples = append(ch.c.Examples, s)
	}
}

// spot checks, once every name is final, the SRV answer of the http port
// and the PTR of the last address written, for up to n changed names.
func (ch *checker) spot(addr string, n int) {
	q := dnsload.NewQuerier(addr)
	defer q.Close()
	m := ch.m
	for k, nm := range m.changed {
		if k >= n {
			break
		}
		var why string
		if r, _, err := q.Ask("_http._tcp."+nm.fqdn, dns.TypeSRV); err != nil {
			why = err.Error()
		} else {
			why = m.checkSRV(nm, r)
		}
		ch.spotResult("_http._tcp."+nm.fqdn+" SRV", why)
		j, a := m.lastWritten(nm)
		rev, _ := dns.ReverseAddr(dnsload.NumAddr(a))
		if r, _, err := q.Ask(rev, dns.TypePTR); err != nil {
			why = err.Error()
		} else {
			why = m.checkPTR(nm, j, r)
		}
		ch.spotResult(rev+" PTR", why)
	}
}

func (ch *checker) spotResult(q, why string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.c.Spot++
	if why != "" {
		ch.c.SpotWrong++
		ch.example(q + ": " + why)
	}
}

func (ch *checker) count() checkCount {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.c
}
