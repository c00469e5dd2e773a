package perf

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
)

// The TCP load of the largest headless service comes from this tool itself
// (`bench tcpload`, run pinned like dnsperf): Debian's dnsperf 2.10 reads
// TCP answers into a 16 KiB buffer and never completes a query whose answer
// is larger, and the whole answer of 1000 endpoints is about 54 KiB.

// tcpLoadSpec is one TCP run.
type tcpLoadSpec struct {
	addr     string
	name     string
	conns    int
	qps      int // 0: as fast as the connections go
	duration time.Duration
	min      int // answer records a complete answer has
}

func (s tcpLoadSpec) args() []string {
	return []string{"tcpload", "-addr", s.addr, "-name", s.name, "-conns", strconv.Itoa(s.conns),
		"-qps", strconv.Itoa(s.qps), "-duration", s.duration.String(), "-min", strconv.Itoa(s.min)}
}

// TCPLoadMain is the tcpload subcommand: it prints the Result as JSON.
func TCPLoadMain(args []string) error {
	var s tcpLoadSpec
	fs := flag.NewFlagSet("tcpload", flag.ContinueOnError)
	fs.StringVar(&s.addr, "addr", "", "server host:port")
	fs.StringVar(&s.name, "name", "", "the name asked (type A)")
	fs.IntVar(&s.conns, "conns", 4, "TCP connections, one query outstanding on each")
	fs.IntVar(&s.qps, "qps", 0, "offered load, queries/s (0: as fast as possible)")
	fs.DurationVar(&s.duration, "duration", 5*time.Second, "length of the run")
	fs.IntVar(&s.min, "min", 1, "answer records of a complete answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.addr == "" || s.name == "" {
		return errors.New("tcpload: -addr and -name are required")
	}
	return json.NewEncoder(os.Stdout).Encode(tcpLoad(s))
}

// tcpLoad runs the load: a pacer hands out send times at the offered rate,
// each connection sends when it gets one and is idle (a send time that
// finds every connection busy is dropped, as dnsperf -Q does at its
// outstanding limit).
func tcpLoad(s tcpLoadSpec) Result {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(s.name), dns.TypeA)
	query, err := m.Pack()
	if err != nil {
		return Result{}
	}
	start := time.Now()
	end := start.Add(s.duration)
	tokens := make(chan struct{}, s.conns)
	if s.qps > 0 {
		ctx, cancel := context.WithDeadline(context.Background(), end)
		defer cancel()
		go dnsload.Pace(ctx, tokens, s.qps)
	}
	var mu sync.Mutex
	res := Result{Rcodes: map[string]int{}}
	var lat []float64
	var bytes float64
	var wg sync.WaitGroup
	for range s.conns {
		wg.Go(func() {
			r, l := tcpClient(s, query, tokens, end)
			mu.Lock()
			defer mu.Unlock()
			res.Sent, res.Completed, res.Lost = res.Sent+r.Sent, res.Completed+r.Completed, res.Lost+r.Lost
			bytes += r.AnswerBytes
			for k, v := range r.Rcodes {
				res.Rcodes[k] += v
			}
			lat = append(lat, l...)
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	res.QPS = float64(res.Completed) / elapsed
	if res.Completed > 0 {
		res.AnswerBytes = bytes / float64(res.Completed)
	}
	res.P50, res.P90, res.P99, res.Max = Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99), Percentile(lat, 100)
	return res
}

// tcpClient runs one connection until end: wait for a send time (when
// paced), send, read the whole answer, check it. Its AnswerBytes is the
// sum, not the mean.
func tcpClient(s tcpLoadSpec, query []byte, tokens <-chan struct{}, end time.Time) (Result, []float64) {
	res := Result{Rcodes: map[string]int{}}
	var lat []float64
	var conn net.Conn
	buf := make([]byte, 2+len(query))
	binary.BigEndian.PutUint16(buf, uint16(len(query)))
	copy(buf[2:], query)
	answer := make([]byte, 65535)
	for id := uint16(1); ; id++ {
		if s.qps > 0 {
			select {
			case <-tokens:
			case <-time.After(time.Until(end)):
			}
		}
		if !time.Now().Before(end) {
			break
		}
		if conn == nil {
			var err error
			if conn, err = net.DialTimeout("tcp", s.addr, 2*time.Second); err != nil {
				res.Lost++
				time.Sleep(10 * time.Millisecond)
				continue
			}
		}
		binary.BigEndian.PutUint16(buf[2:], id)
		sent := time.Now()
		res.Sent++
		rcode, ancount, size, err := exchangeTCP(conn, buf, answer, id, sent.Add(2*time.Second))
		if err != nil {
			res.Lost++
			conn.Close()
			conn = nil
			continue
		}
		lat = append(lat, float64(time.Since(sent).Microseconds())/1000)
		res.Completed++
		res.AnswerBytes += float64(size)
		name := dns.RcodeToString[rcode]
		if rcode == dns.RcodeSuccess && ancount < s.min {
			name = fmt.Sprintf("SHORT(<%d records)", s.min)
		}
		res.Rcodes[name]++
	}
	if conn != nil {
		conn.Close()
	}
	return res, lat
}

// exchangeTCP writes one framed query and reads the framed answer, and
// returns its rcode and answer count from the header, and its size.
func exchangeTCP(conn net.Conn, query, answer []byte, id uint16, deadline time.Time) (rcode, ancount, size int, err error) {
	conn.SetDeadline(deadline)
	if _, err := conn.Write(query); err != nil {
		return 0, 0, 0, err
	}
	if _, err := io.ReadFull(conn, answer[:2]); err != nil {
		return 0, 0, 0, err
	}
	n := int(binary.BigEndian.Uint16(answer))
	if n < 12 {
		return 0, 0, 0, fmt.Errorf("answer of %d bytes", n)
	}
	if _, err := io.ReadFull(conn, answer[:n]); err != nil {
		return 0, 0, 0, err
	}
	if binary.BigEndian.Uint16(answer) != id {
		return 0, 0, 0, errors.New("answer to another query")
	}
	return int(answer[3] & 0x0f), int(binary.BigEndian.Uint16(answer[6:])), n, nil
}
