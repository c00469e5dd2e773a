package perf

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// GoBench is one line of the in-process benchmark.
type GoBench struct {
	Plugin, Case string
	NsPerOp      float64
	BytesPerOp   int64
	AllocsPerOp  int64
}

// BuildInprocess compiles the in-process benchmark (bench/inprocess) into
// the work directory, so that its run is not charged with the build.
func BuildInprocess(ctx context.Context, root, work string) (string, error) {
	bin := filepath.Join(work, "inprocess.test")
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./inprocess")
	cmd.Dir = filepath.Join(root, "bench")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the in-process benchmark: %w\n%s", err, out)
	}
	return bin, nil
}

// GoBenchArgs are the test binary's arguments.
func GoBenchArgs(cfg Settings) []string {
	return []string{"-test.run=^$", "-test.bench=BenchmarkServeDNS", "-test.benchmem", "-test.benchtime=" + cfg.Benchtime}
}

// RunInprocess runs the benchmark against the loaded API server, pinned to
// the server CPU like the servers, and parses its lines.
func RunInprocess(ctx context.Context, cfg Settings, bin, kubeconfig, cases, mix string) ([]GoBench, error) {
	cmd := cfg.Pinned(cfg.ServerCPU, bin, GoBenchArgs(cfg)...)
	cmd.Env = append(os.Environ(),
		"SCHEMADNS_BENCH_KUBECONFIG="+kubeconfig, "SCHEMADNS_BENCH_CASES="+cases, "SCHEMADNS_BENCH_MIX="+mix)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("in-process benchmark: %w\n%s", err, out.String())
	}
	res := parseGoBench(out.String())
	if len(res) == 0 {
		return nil, fmt.Errorf("in-process benchmark printed no results:\n%s", out.String())
	}
	return res, nil
}

// parseGoBench reads lines such as
// "BenchmarkServeDNS/kubeschema/ClusterIP_A   3971418   301.2 ns/op   96 B/op   2 allocs/op"
// (a -N suffix is printed when GOMAXPROCS is not 1).
func parseGoBench(out string) []GoBench {
	var res []GoBench
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || !strings.HasPrefix(f[0], "BenchmarkServeDNS/") {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(f[0], "BenchmarkServeDNS/"), "/", 2)
		if len(parts) != 2 {
			continue
		}
		name := parts[1]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		b := GoBench{Plugin: parts[0], Case: strings.ReplaceAll(name, "_", " ")}
		for i := 2; i+1 < len(f); i += 2 {
			v, _ := strconv.ParseFloat(f[i], 64)
			switch f[i+1] {
			case "ns/op":
				b.NsPerOp = v
			case "B/op":
				b.BytesPerOp = int64(v)
			case "allocs/op":
				b.AllocsPerOp = int64(v)
			}
		}
		res = append(res, b)
	}
	return res
}
