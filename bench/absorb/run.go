package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/dnsload"
	"github.com/schemadns/schemadns/internal/procstat"
)

// target is one server under test: its plugin, the same options for both
// (bench's: a kubeconfig and pods verified).
type target struct{ Key, Plugin string }

var targets = []target{{Key: keyOurs, Plugin: "kubeschema"}, {Key: keyStock, Plugin: "kubernetes"}}

const (
	keyOurs  = "kubeschema"
	keyStock = "stock"
)

// corefile is the server under test alone in its block; with pprof (a
// port, for -profile) a second block serves /debug/pprof, out of the
// query path.
func corefile(t target, port int, kubeconfig string, admin, pprof int) string {
	cf := fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    %s cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods verified
    }
}
`, port, t.Plugin, kubeconfig)
	if pprof != 0 {
		cf += fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    pprof 127.0.0.1:%d\n}\n", admin, pprof)
	}
	return cf
}

func kubeconfig(server string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: absorb
  cluster:
    server: http://%s
users:
- name: absorb
  user: {}
contexts:
- name: absorb
  context: {cluster: absorb, user: absorb}
current-context: absorb
`, server)
}

// roundResult is one server's absorption of the updates, once.
type roundResult struct {
	Target  string
	Updates int
	Seconds float64 // first update byte fed → every changed name at its final state
	FeedSec float64 // first → last update byte written
	Rate    float64 // updates/s
	CPU     float64 // server utime+stime over Seconds, s
	CPUPer  float64 // µs per update
	SyncSec float64 // process start → the last service answered
	// Busy is the server's CPU over Seconds (1: the core was always its);
	// Others the share of its core other processes took; ToolCore the
	// share of this tool's core busy, Tool this tool's own CPU, over the
	// same span.
	Busy, Others, ToolCore, Tool float64
	Check                        checkCount
	// StaleAtEnd: changed names not at their final state within
	// settleTimeout of the last one's.
	StaleAtEnd int
	// FoundStale: names the sweep after the last update's name found
	// behind (the end then moved to when they caught up).
	FoundStale int
	Requests   map[string]int
	Unknown    []string
}

// settleTimeout bounds the wait for every changed name once the last
// update's name shows its state, and absorbTimeout the wait for that.
const settleTimeout = 30 * time.Second

// runOne starts a fake API server and the target on it, waits for the
// sync, releases every update and times their absorption.
func runOne(ctx context.Context, cfg *config, enc *encoded, t target, round int) (*roundResult, error) {
	res := &roundResult{Target: t.Key, Updates: len(enc.cluster.updates)}
	api, err := startAPIServer(enc, logf)
	if err != nil {
		return nil, err
	}
	defer api.close()
	defer func() { res.Requests, res.Unknown = api.counts(), api.unknown }()
	ports, err := dnsload.FreePorts(3)
	if err != nil {
		return nil, err
	}
	pprof := 0
	if cfg.profile != "" {
		pprof = ports[2]
	}
	base := filepath.Join(cfg.work, fmt.Sprintf("%s-%s-%d", enc.cluster.shape.Name, t.Key, round))
	if err := writeTargetFiles(base, api.addr, t, ports, pprof); err != nil {
		return nil, err
	}
	cmd := targetCommand(cfg, base)
	started := time.Now()
	child, err := procstat.StartChild(cmd, base+".log")
	if err != nil {
		return nil, err
	}
	defer child.Stop()
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	m := enc.model
	if err := waitSynced(ctx, child, addr, enc, base+".log"); err != nil {
		return res, err
	}
	res.SyncSec = time.Since(started).Seconds()
	// Let the start-up's garbage collections and rebuilds end before the
	// clock starts.
	time.Sleep(2 * time.Second)
	cpu0, err := procstat.CPUSeconds(child.PID())
	if err != nil {
		return res, err
	}
	serverBusy0, _ := procstat.CPUBusy(cfg.serverCPU)
	toolBusy0, _ := procstat.CPUBusy(cfg.clientCPU)
	self0, _ := procstat.CPUSeconds(os.Getpid())
	checkCtx, stopCheck := context.WithCancel(ctx)
	chk := &checker{m: m}
	var wg sync.WaitGroup
	wg.Go(func() { chk.run(checkCtx, addr, cfg.checkRate) })
	defer func() { stopCheck(); wg.Wait(); res.Check = chk.count() }()

	api.feed()
	if pprof != 0 {
		out := filepath.Join(cfg.profile, filepath.Base(base)+".cpu.pprof")
		wg.Go(func() {
			saveProfile(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", pprof, profileSeconds), out)
		})
	}
	last, err := pollFinal(ctx, addr, m.last, child, cfg.timeout)
	if err != nil {
		return res, fmt.Errorf("%s: %w; see %s", t.Key, err, base+".log")
	}
	cpu1, err := procstat.CPUSeconds(child.PID())
	if err != nil {
		return res, err
	}
	serverBusy1, _ := procstat.CPUBusy(cfg.serverCPU)
	toolBusy1, _ := procstat.CPUBusy(cfg.clientCPU)
	self1, _ := procstat.CPUSeconds(os.Getpid())
	stopCheck() // the absorption is over: what follows only confirms it
	wg.Wait()
	end, found, stale := sweep(ctx, addr, m.changed, last)
	res.FoundStale, res.StaleAtEnd = found, stale
	first := begin.Add(time.Duration(api.firstByte.Load()))
	res.Seconds = end.Sub(first).Seconds()
	res.FeedSec = time.Duration(api.lastByte.Load() - api.firstByte.Load()).Seconds()
	res.Rate = float64(res.Updates) / res.Seconds
	if found > 0 { // the end moved past the CPU reading: read it again
		if cpu1, err = procstat.CPUSeconds(child.PID()); err != nil {
			return res, err
		}
	}
	res.CPU = cpu1 - cpu0
	// Read when the last update's name showed its state: over that span.
	span := last.Sub(first).Seconds()
	res.Busy = res.CPU / res.Seconds
	if cfg.pin {
		res.Others = max(serverBusy1-serverBusy0-(cpu1-cpu0), 0) / span
		res.ToolCore = (toolBusy1 - toolBusy0) / span
	}
	res.Tool = (self1 - self0) / span
	res.CPUPer = res.CPU / float64(res.Updates) * 1e6
	chk.spot(addr, cfg.spot)
	if stale > 0 {
		return res, fmt.Errorf("%s: %d changed names not at their final state %s after the last update's name was", t.Key, stale, settleTimeout)
	}
	return res, nil
}

// writeTargetFiles writes the target's kubeconfig (to the fake API server
// at apiAddr) and Corefile next to base.
func writeTargetFiles(base, apiAddr string, t target, ports []int, pprof int) error {
	if err := os.WriteFile(base+".kubeconfig", []byte(kubeconfig(apiAddr)), 0o600); err != nil {
		return err
	}
	return os.WriteFile(base+".Corefile", []byte(corefile(t, ports[0], base+".kubeconfig", ports[1], pprof)), 0o644)
}

// targetCommand runs the binary on the Corefile next to base, pinned to the
// server CPU (unless -pin=false), with GOMAXPROCS=1.
func targetCommand(cfg *config, base string) *exec.Cmd {
	cmd := exec.Command(cfg.CoreDNS, "-conf", base+".Corefile")
	if cfg.pin {
		cmd = exec.Command("taskset", "-c", strconv.Itoa(cfg.serverCPU), cfg.CoreDNS, "-conf", base+".Corefile")
	}
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	return cmd
}

// waitSynced polls the last headless service until it answers with its
// initial addresses: the lists are in and rendered.
func waitSynced(ctx context.Context, child *procstat.Child, addr string, enc *encoded, logPath string) error {
	c := enc.cluster
	i := c.headless[len(c.headless)-1]
	n := &name{states: map[uint64]int{}}
	initial := make([]uint32, c.shape.Endpoints)
	for j := range initial {
		initial[j] = dnsload.AddrNum(endpointBase) + uint32(i*c.shape.Endpoints+j)
	}
	n.states[dnsload.SetHash(initial)] = 0
	fqdn := fmt.Sprintf("%s.%s.svc.cluster.local.", c.shape.serviceName(i), c.shape.namespace(i))
	q := dnsload.NewQuerier(addr)
	defer q.Close()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if !child.Alive() {
			return fmt.Errorf("the server exited before it synced; see %s", logPath)
		}
		if r, _, err := q.Ask(fqdn, dns.TypeA); err == nil && n.judge(r).seq == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the server never synced: %s had no complete answer within 3m; see %s", fqdn, logPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pollInterval paces the asking of the last update's name.
const pollInterval = 5 * time.Millisecond

// pollFinal asks for n until it shows its final state and returns when
// it first did.
func pollFinal(ctx context.Context, addr string, n *name, child *procstat.Child, within time.Duration) (time.Time, error) {
	q := dnsload.NewQuerier(addr)
	defer q.Close()
	deadline := time.Now().Add(within)
	for {
		if r, _, err := q.Ask(n.fqdn, dns.TypeA); err == nil && n.judge(r).final {
			return time.Now(), nil
		}
		switch {
		case !child.Alive():
			return time.Time{}, errors.New("the server exited while absorbing")
		case ctx.Err() != nil:
			return time.Time{}, ctx.Err()
		case time.Now().After(deadline):
			return time.Time{}, fmt.Errorf("the last update's name %s was not at its final state within %s", n.fqdn, within)
		}
		time.Sleep(pollInterval)
	}
}

// sweep asks every changed name, from last on, until each shows its final
// state (for up to settleTimeout); end is last, or when the last name
// found behind caught up. A server applies its one watch stream in order,
// so the names should all be final once the last update's is: found
// counts those that were not.
func sweep(ctx context.Context, addr string, names []*name, last time.Time) (end time.Time, found, stale int) {
	q := dnsload.NewQuerier(addr)
	defer q.Close()
	end = last
	pending := names
	deadline := time.Now().Add(settleTimeout)
	for first := true; len(pending) > 0 && time.Now().Before(deadline) && ctx.Err() == nil; first = false {
		var still []*name
		for _, n := range pending {
			r, _, err := q.Ask(n.fqdn, dns.TypeA)
			if err != nil || !n.judge(r).final {
				still = append(still, n)
			} else if !first {
				end = time.Now()
			}
		}
		if first {
			found = len(still)
		}
		if pending = still; len(pending) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return end, found, len(pending)
}

// profileSeconds is how much of an absorption -profile records.
const profileSeconds = 5

// saveProfile fetches a CPU profile into out; a failure is logged, not
// fatal: the profile is not a figure.
func saveProfile(url, out string) {
	resp, err := http.Get(url)
	if err == nil {
		defer resp.Body.Close()
		var b []byte
		if b, err = io.ReadAll(resp.Body); err == nil {
			err = os.WriteFile(out, b, 0o644)
		}
	}
	if err != nil {
		logf("profile %s: %v", out, err)
	}
}
