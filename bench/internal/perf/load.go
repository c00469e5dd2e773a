package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/procstat"
)

// Spec is one load run: dnsperf over UDP, or over TCP this tool's
// own client (see tcpload.go), which asks one name.
type Spec struct {
	File                 string
	TCP                  bool
	TCPName              string // the name asked over TCP
	TCPMin               int    // answer records of its whole answer
	QPS                  int    // offered load; 0 saturates
	Duration             time.Duration
	Clients, Outstanding int  // TCP: clients are the connections
	Verbose              bool // per-query latencies, for percentiles
}

// Result is what one run measured.
type Result struct {
	Sent, Completed, Lost int
	QPS                   float64
	Rcodes                map[string]int
	// Latency percentiles in milliseconds, from dnsperf -v's per-query
	// lines (Debian's dnsperf 2.10 has no latency histogram option).
	P50, P90, P99, Max float64
	ServerCPU          float64 // seconds, utime+stime of the server
	CPUPerQuery        float64 // microseconds of server CPU per answered query
	// OtherBusy is the share of the server's CPU that other processes
	// (or the hypervisor, as steal time) used during the run: the noise
	// of a shared machine.
	OtherBusy float64
	Elapsed   float64
	// AnswerBytes is the mean size of an answer (TCP runs only).
	AnswerBytes float64
}

// args are dnsperf's arguments for spec against port, or tcpload's.
func (spec Spec) args(port int) []string {
	if spec.TCP {
		return tcpLoadSpec{addr: "127.0.0.1:" + strconv.Itoa(port), name: spec.TCPName, conns: spec.Clients,
			qps: spec.QPS, duration: spec.Duration, min: spec.TCPMin}.args()
	}
	a := []string{"-s", "127.0.0.1", "-p", strconv.Itoa(port), "-d", spec.File,
		"-l", strconv.FormatFloat(spec.Duration.Seconds(), 'f', -1, 64),
		"-c", strconv.Itoa(spec.Clients), "-q", strconv.Itoa(spec.Outstanding), "-t", "2"}
	if spec.QPS > 0 {
		a = append(a, "-Q", strconv.Itoa(spec.QPS))
	}
	if spec.Verbose {
		a = append(a, "-v")
	}
	return a
}

// Command is the run as a shell line for the report, with the port
// replaced by PORT and the data file by its base name.
func (spec Spec) Command(cfg Settings) string {
	a := spec.args(0)
	for i := range a {
		switch {
		case i > 0 && a[i-1] == "-p":
			a[i] = "PORT"
		case i > 0 && a[i-1] == "-addr":
			a[i] = "127.0.0.1:PORT"
		case i > 0 && a[i-1] == "-d":
			a[i] = a[i][strings.LastIndexByte(a[i], '/')+1:]
		}
	}
	prog := "dnsperf"
	if spec.TCP {
		prog = "go run ." // in bench/
	}
	if cfg.Pin {
		prog = fmt.Sprintf("taskset -c %d %s", cfg.ClientCPU, prog)
	}
	return prog + " " + strings.Join(a, " ")
}

// loadCommand is the command of a run: dnsperf, or this tool's tcpload.
func (spec Spec) loadCommand(cfg Settings, port int) (*exec.Cmd, error) {
	if !spec.TCP {
		return cfg.Pinned(cfg.ClientCPU, "dnsperf", spec.args(port)...), nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return cfg.Pinned(cfg.ClientCPU, self, spec.args(port)...), nil
}

// Run runs dnsperf against s and charges the server's CPU time over
// the run to the queries it answered.
func Run(ctx context.Context, cfg Settings, s *server.Server, spec Spec) (Result, error) {
	cmd, err := spec.loadCommand(cfg, s.Port)
	if err != nil {
		return Result{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cpu0, err := procstat.CPUSeconds(s.PID())
	if err != nil {
		return Result{}, err
	}
	busy0, _ := procstat.CPUBusy(cfg.ServerCPU)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("dnsperf: %w", err)
	}
	stopOnCancel := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stopOnCancel()
	var r Result
	var lat []float64
	if spec.TCP {
		err = json.NewDecoder(out).Decode(&r)
		io.Copy(io.Discard, out)
	} else {
		r, lat = parsePerf(out)
	}
	if werr := cmd.Wait(); werr != nil || err != nil {
		return r, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), errors.Join(werr, err), stderr.String())
	}
	r.Elapsed = time.Since(start).Seconds()
	cpu1, err := procstat.CPUSeconds(s.PID())
	if err != nil {
		return r, fmt.Errorf("%s: %w (did it exit? see %s)", s, err, s.LogPath)
	}
	busy1, _ := procstat.CPUBusy(cfg.ServerCPU)
	r.ServerCPU = cpu1 - cpu0
	if r.Completed > 0 {
		r.CPUPerQuery = r.ServerCPU / float64(r.Completed) * 1e6
	}
	if cfg.Pin && r.Elapsed > 0 {
		r.OtherBusy = math.Max(0, (busy1-busy0-r.ServerCPU)/r.Elapsed)
	}
	if !spec.TCP {
		r.P50, r.P90, r.P99, r.Max = Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99), Percentile(lat, 100)
	}
	if r.Completed == 0 {
		return r, fmt.Errorf("dnsperf against %s: no query answered: %s", s, stderr.String())
	}
	return r, nil
}

// parsePerf reads dnsperf's output: per-query lines ("> NOERROR name A
// 0.000083", with -v) and the statistics at the end. Latencies are in ms.
func parsePerf(out io.Reader) (Result, []float64) {
	r := Result{Rcodes: map[string]int{}}
	var lat []float64
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "> ") {
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				lat = append(lat, v*1000)
			}
			continue
		}
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		first := strings.Fields(value + " ")
		switch key {
		case "Queries sent":
			r.Sent, _ = strconv.Atoi(first[0])
		case "Queries completed":
			r.Completed, _ = strconv.Atoi(first[0])
		case "Queries lost":
			r.Lost, _ = strconv.Atoi(first[0])
		case "Queries per second":
			r.QPS, _ = strconv.ParseFloat(first[0], 64)
		case "Response codes":
			for part := range strings.SplitSeq(value, ",") {
				f := strings.Fields(part)
				if len(f) >= 2 {
					r.Rcodes[f[0]], _ = strconv.Atoi(f[1])
				}
			}
		}
	}
	return r, lat
}

// Percentile is the nearest-rank percentile p of xs (0 when empty).
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Median of xs (0 when empty).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// DnsperfVersion is the "Version 2.10.0" line of dnsperf -h.
func DnsperfVersion() string {
	out, _ := exec.Command("dnsperf", "-h").CombinedOutput()
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Version "); ok {
			return v
		}
	}
	return "unknown"
}

// MaxOf is the largest of xs (0 when empty).
func MaxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
