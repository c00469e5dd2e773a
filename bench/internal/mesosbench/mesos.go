// Package mesosbench measures mesosschema on the Mesos shapes (M1, M2)
// against CoreDNS's stock file plugin: a stand-in Mesos master behind a
// tap, the poller's CPU per poll and poll-to-answer times, memory, and the
// query mix at a fixed load.
package mesosbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/internal/toolreport"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// The Mesos shapes: mesosschema polling a stand-in master (in this
// process, behind a tap that records each poll; mesostap.go), against the
// stock file plugin serving the same records from a zone file. For each
// shape the tool
//
//  1. starts the poller (mesosschema, refresh 1s, and the stock transfer
//     plugin) and takes its AXFR: the file plugin's zone, and the names
//     the query mix is drawn from (checked against mesosstate's naming
//     rules);
//  2. starts mesosschema polling once an hour (the query tests, and the
//     idle process the poller's CPU is net of) and the file plugin, each
//     timed to its first answer, and reads their memory at rest;
//  3. measures the poller's CPU per poll over series of polls of each kind
//     and the time from a changed poll to the answer that shows the change
//     (mesospoll.go), then its memory after those polls, and stops it;
//  4. compares the answers of mesosschema and file to the mix, then runs
//     the rounds of the mix at a fixed load on both, interleaved.

// Config are the Mesos shapes' flags (-mesos-*).
type Config struct {
	Changes, Polls int
	Replace        float64
	QPS            int
}

// Env is what the measurement of a Mesos shape takes from the run.
type Env struct {
	perf.Settings
	Opts    Config
	Profile string // -profile: where profiles go ("" for none)
	Work    string // the work directory: Corefiles, logs, the zone file, the mix
	// Targets are the run's targets by key, which each server started
	// joins with its label.
	Targets map[string]string
}

// logf prints progress with the time since start.
var logf = toolflags.Logf

// The Mesos targets' keys.
const (
	KeyMesos       = "mesosschema"
	KeyMesosPoller = "mesosschema-poller"
	KeyFile        = "file"
)

// TestMix is the Mesos query mix at a fixed load, in perf.Figures.
const TestMix = "mesos-mix"

// pollRefresh is the poller's refresh, the shortest mesosschema takes.
const pollRefresh = time.Second

// TTL is the TTL of every target's records (the file plugin's come
// from the AXFR).
const TTL = 60

var (
	targetMesos = server.Target{Key: KeyMesos, Label: "mesosschema (ours), polling the master once an hour: no poll falls in a query run",
		Stanza: func(master string) string { return mesosStanza(master, "1h", "") }}
	targetMesosPoller = server.Target{Key: KeyMesosPoller, Label: "mesosschema (ours), polling the master every second, with the stock transfer plugin (the AXFR)",
		Stanza: func(master string) string {
			return mesosStanza(master, pollRefresh.String(), "transfer "+strings.TrimSuffix(mesosZone, ".")+" {\n        to *\n    }")
		}}
	targetFile = server.Target{Key: KeyFile, Label: "CoreDNS's stock file plugin serving the same records, a zone file made from mesosschema's AXFR",
		Stanza: func(zonefile string) string { return "file " + zonefile + " " + strings.TrimSuffix(mesosZone, ".") }}
)

// mesosStanza is mesosschema's stanza polling master every refresh, and
// the plugins that follow it in the block.
func mesosStanza(master, refresh, after string) string {
	s := fmt.Sprintf("mesosschema %s {\n        masters %s\n        refresh %s\n        ttl %d\n    }",
		strings.TrimSuffix(mesosZone, "."), master, refresh, TTL)
	if after != "" {
		s += "\n    " + after
	}
	return s
}

// Result are the figures of one Mesos shape.
type Result struct {
	Shape Shape
	// From names the earlier run the shape was kept from (-keep-others).
	From  string `json:",omitempty"`
	State StateFacts
	// Memory is by target: mesosschema and file at rest after the state is
	// loaded, the poller after the poll tests.
	Memory map[string]server.Memory
	// FirstAnswer is by target the seconds from the process's start to the
	// probe's answer.
	FirstAnswer map[string]float64
	// PollerPolls are the polls the poller made in all, by its
	// polls_total, when its memory was read after the poll tests.
	PollerPolls int
	Polls       []PollSeries
	Latency     []AnswerTimes
	Perf        *perf.Figures // the mix at a fixed load, mesosschema and file
	Mix         string
	MixCommand  string
	// MixNames are the task names the state gives and those the zone held.
	MixNames struct{ Expected, Found int }
	// Notes are what the run saw that the figures should be read with.
	Notes []string
}

// mesosRun is the state of one Mesos shape's measurement.
type mesosRun struct {
	*Env
	mr      *Result
	si      *standIn
	base    *mesosstate.State
	body    []byte
	probes  []server.Sentinel
	servers map[string]*server.Server
	mixFile string
}

// Measure measures one Mesos shape.
func Measure(ctx context.Context, e *Env, sh Shape) (*Result, error) {
	mr := &Result{Shape: sh, Memory: map[string]server.Memory{}, FirstAnswer: map[string]float64{}}
	logf("%s %s: %s", sh.Name, sh.Title, sh.Describe())
	si, err := startStandIn()
	if err != nil {
		return mr, err
	}
	defer si.close()
	r := &mesosRun{Env: e, mr: mr, si: si, servers: map[string]*server.Server{}}
	defer r.stop()
	if err := r.prepare(); err != nil {
		return mr, err
	}
	if err := r.startAll(ctx); err != nil {
		return mr, err
	}
	if err := r.pollTests(ctx); err != nil {
		return mr, err
	}
	r.stop(KeyMesosPoller)
	return mr, r.queryTests(ctx)
}

// prepare makes the shape's state, served by the stand-in.
func (r *mesosRun) prepare() error {
	r.base = ledBy(mesosstatetest.Generate(r.mr.Shape.Gen), r.si.addr)
	r.body = mesosstatetest.Marshal(r.base)
	gz, err := r.si.serve(r.body)
	if err != nil {
		return err
	}
	r.mr.State = factsOf(r.base)
	r.mr.State.JSONBytes, r.mr.State.GzipBytes = len(r.body), gz
	p, ok := lastProbe(r.base)
	if !ok {
		return errors.New("the state has no running task with an IPv4 address to probe")
	}
	r.probes = []server.Sentinel{{Name: p.name, Qtype: dns.TypeA, Min: 1}}
	logf("state: %s running tasks, %s apps, %.1f MB of JSON (%.1f MB gzipped)",
		toolreport.Thousands(r.mr.State.Running), toolreport.Thousands(r.mr.State.Apps), float64(len(r.body))/1e6, float64(gz)/1e6)
	return nil
}

// lastProbe is the instance name of the last running task that has an
// IPv4 address: the probe of a server's first complete answer.
func lastProbe(st *mesosstate.State) (probe, bool) {
	m := newMutator(mesosZone, 0)
	refs := namedRunning(st)
	for i := len(refs) - 1; i >= 0; i-- {
		fw := &st.Frameworks[refs[i].fw]
		if p, ok := m.probeOf(&fw.Tasks[refs[i].task], fw, st.Slaves); ok {
			return p, true
		}
	}
	return probe{}, false
}

// startAll starts the poller, takes its AXFR, writes the zone file and
// the mix, then starts the servers of the query tests.
func (r *mesosRun) startAll(ctx context.Context) error {
	poller, err := r.launch(ctx, targetMesosPoller, r.si.addr)
	if err != nil {
		return err
	}
	z, err := transferZone(poller.Addr(), mesosZone)
	if err != nil {
		return err
	}
	r.mr.State.ZoneRecords = len(z.rrs)
	zoneFile := filepath.Join(r.Work, r.mr.Shape.Name+"-mesos.zone")
	if err := z.write(zoneFile); err != nil {
		return err
	}
	if err := r.writeMix(z); err != nil {
		return err
	}
	return r.startServing(ctx, zoneFile)
}

// startServing starts mesosschema (polling once an hour) and file, reads
// their memory at rest and the names mesosschema serves.
func (r *mesosRun) startServing(ctx context.Context, zoneFile string) error {
	for _, t := range []struct {
		server.Target
		source string
	}{{targetMesos, r.si.addr}, {targetFile, zoneFile}} {
		s, err := r.launch(ctx, t.Target, t.source)
		if err != nil {
			return err
		}
		time.Sleep(2 * time.Second) // let the start's work settle, as for the cluster shapes
		if r.mr.Memory[t.Key], err = s.ReadMemory(); err != nil {
			return err
		}
		if err := r.heapProfile(s); err != nil {
			return err
		}
		m := r.mr.Memory[t.Key]
		logf("%s answers %s after start; heap %.1f MiB, RSS %.1f MiB (peak %.1f MiB)", s, s.SyncTime.Round(time.Millisecond),
			float64(m.HeapInuse)/mib, float64(m.RSS)/mib, float64(m.PeakRSS)/mib)
	}
	vals, err := server.PromValues(r.servers[KeyMesos])
	if err != nil {
		return err
	}
	r.mr.State.Names = int(vals["coredns_mesosschema_names"])
	logf("zone: %s names served, %s records in the AXFR", toolreport.Thousands(r.mr.State.Names), toolreport.Thousands(r.mr.State.ZoneRecords))
	return nil
}

// writeMix writes the query file from the state's names the zone holds.
func (r *mesosRun) writeMix(z *zone) error {
	names := namesOf(r.base, z.has)
	r.mr.MixNames.Expected, r.mr.MixNames.Found = names.expected, names.found
	if names.found < names.expected*95/100 {
		return fmt.Errorf("the AXFR holds %d of the %d task names the state gives: the plugin names tasks otherwise than the mix expects", names.found, names.expected)
	}
	if names.found < names.expected {
		r.note("the AXFR holds %d of the %d task names the state gives (the mix asks those it holds)", names.found, names.expected)
	}
	mix, err := mesosMix(names, z)
	if err != nil {
		return err
	}
	r.mr.Mix = querymix.Describe(mix)
	r.mixFile = filepath.Join(r.Work, r.mr.Shape.Name+"-mix.txt")
	return querymix.WriteQueries(r.mixFile, querymix.Generate(mix, querymix.Lines))
}

// launch starts t reading source and waits for its answer to the probe.
func (r *mesosRun) launch(ctx context.Context, t server.Target, source string) (*server.Server, error) {
	s, err := server.Start(r.Options, r.Work, source, r.mr.Shape.Name, t)
	if err != nil {
		return nil, err
	}
	r.servers[t.Key] = s
	r.Targets[t.Key] = t.Label
	if err := s.WaitSynced(ctx, r.probes, 2*time.Minute); err != nil {
		return nil, err
	}
	r.mr.FirstAnswer[t.Key] = s.SyncTime.Seconds()
	return s, nil
}

// stop stops the servers of the given targets, or all.
func (r *mesosRun) stop(keys ...string) { server.StopAll(r.servers, keys...) }

// heapProfile saves s's heap profile (-profile): mesosschema's and file's
// at rest, the poller's after the poll tests (compare them with pprof
// -base).
func (r *mesosRun) heapProfile(s *server.Server) error {
	return server.SaveHeapProfile(r.Profile, r.mr.Shape.Name, s)
}

// note records something the figures should be read with.
func (r *mesosRun) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	r.mr.Notes = append(r.mr.Notes, n)
	logf("note: %s", n)
}

// queryTests compares the answers of mesosschema and file to the mix and
// runs the rounds: the mix at a fixed load on each in turn.
func (r *mesosRun) queryTests(ctx context.Context) error {
	ours, file := r.servers[KeyMesos], r.servers[KeyFile]
	p := &perf.Figures{Rates: map[string]int{}, Calibration: map[string]map[string]float64{}}
	r.mr.Perf = p
	c := server.Compare(ours, file, r.mixFile)
	logf("answers %s: %d of %d distinct queries differ", c.Pair, c.Differing, c.Compared)
	p.CrossCheck = []server.CrossCheck{c}
	plans := []perf.Plan{{Name: TestMix, Targets: []*server.Server{ours, file},
		Spec: perf.Spec{File: r.mixFile, Duration: r.Duration, Clients: 4, Outstanding: 100, Verbose: true}}}
	if err := perf.Calibrate(ctx, r.Settings, &plans[0], r.Opts.QPS, p); err != nil {
		return err
	}
	r.mr.MixCommand = plans[0].Spec.Command(r.Settings)
	return perf.RunRounds(ctx, r.Settings, plans, p)
}

// mesosSerial is the SOA serial of s's zone.
func mesosSerial(s *server.Server) (uint32, error) {
	m, err := server.Exchange(s.Addr(), false, mesosZone, dns.TypeSOA)
	if err != nil {
		return 0, err
	}
	for _, rr := range m.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, nil
		}
	}
	return 0, fmt.Errorf("%s: no SOA in the answer to %s SOA (%s)", s, mesosZone, dns.RcodeToString[m.Rcode])
}

// pinSelf puts this process's threads on the client CPU (the stand-in
// master and the checkers run there, off the server's CPU); unpinSelf
// undoes it.
func pinSelf(cfg server.Options) error {
	if !cfg.Pin {
		return nil
	}
	return server.SetAffinity(os.Getpid(), fmt.Sprint(cfg.ClientCPU))
}

func unpinSelf(cfg server.Options) {
	if cfg.Pin {
		if err := server.SetAffinity(os.Getpid(), server.AllCPUs()); err != nil {
			logf("%v", err)
		}
	}
}

// Series is the shape's poll series of a kind (Polls 0 when not measured).
func (mr *Result) Series(kind string) PollSeries {
	if mr == nil {
		return PollSeries{}
	}
	for _, s := range mr.Polls {
		if s.Kind == kind {
			return s
		}
	}
	return PollSeries{}
}

const mib = 1 << 20
