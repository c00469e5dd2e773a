package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/internal/toolreport"
)

// results are one run of the tool, for the report.
type results struct {
	Started, Finished time.Time
	Command           string
	Scale             string
	Note              string
	Machine           toolreport.Machine
	CheckRate         int
	Pinned            bool
	ServerCPU         int
	ClientCPU         int
	Shapes            []*shapeResult
	Errors            []string
}

// shapeResult is one shape's runs.
type shapeResult struct {
	Shape       shape
	Updates     int
	Names       int // changed headless names
	ListBytes   int // the EndpointSlice list
	EventBytes  int // every update event, framed
	EncodeSec   float64
	Rounds      []*roundResult
	ByTarget    map[string]*summary
	RatioRate   float64 // ours/stock, of the medians
	RatioCPU    float64
	WatchListed bool // every run synced through a watch-list
}

// summary is one target's rounds on a shape: medians and ranges.
type summary struct {
	Rate, RateMin, RateMax       float64
	CPUPer, CPUPerMin, CPUPerMax float64
	Seconds                      float64
	Check                        checkCount
	CheckRate                    float64 // A answers checked per second, up to the last update's name final
	StaleAtEnd, FoundStale       int
	Runs                         int
}

// Targets of issue 20: on one core, ours absorbs at least this many
// updates/s, and at least ratioTarget × stock.
const (
	rateTarget  = 5000
	ratioTarget = 2.0
)

func run(ctx context.Context, cfg *config, args []string) error {
	res := &results{Started: time.Now(), Scale: cfg.Scale, Note: cfg.Note, CheckRate: cfg.checkRate,
		Pinned: cfg.pin, ServerCPU: cfg.serverCPU, ClientCPU: cfg.clientCPU,
		Command: strings.TrimSpace("cd bench && GOWORK=off go run ./absorb " + toolflags.ShellJoin(args))}
	res.Machine = toolreport.ReadMachine(cfg.CoreDNS)
	var err error
	if cfg.work, err = os.MkdirTemp("", "absorb-"); err != nil {
		return err
	}
	if cfg.Keep {
		logf("work directory: %s", cfg.work)
	} else {
		defer os.RemoveAll(cfg.work)
	}
	for _, s := range cfg.shapes {
		if ctx.Err() != nil {
			break
		}
		sr := measureShape(ctx, cfg, s, res)
		res.Shapes = append(res.Shapes, sr)
	}
	res.Finished = time.Now()
	res.Machine.LoadEnd = toolreport.LoadAverage()
	if ctx.Err() != nil {
		res.Errors = append(res.Errors, "interrupted: "+ctx.Err().Error())
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return err
	}
	out := filepath.Join(cfg.OutDir, "absorption.md")
	if err := os.WriteFile(out, []byte(markdown(res)), 0o644); err != nil {
		return err
	}
	fmt.Print(summaryText(res))
	logf("wrote %s", out)
	if len(res.Errors) > 0 {
		return fmt.Errorf("%d errors (listed in %s): %s", len(res.Errors), out, res.Errors[0])
	}
	return nil
}

// measureShape encodes the shape and its updates, then runs every round.
func measureShape(ctx context.Context, cfg *config, s shape, res *results) *shapeResult {
	n := cfg.updates
	if n == 0 {
		n = s.Updates
	}
	logf("%s: building %s and %d updates", s.Name, s.describe(), n)
	c := newCluster(s)
	c.plan(n)
	enc := encode(c)
	es := enc.resources["apis/discovery.k8s.io/v1/endpointslices"]
	sr := &shapeResult{Shape: s, Updates: n, Names: len(enc.model.changed), ListBytes: len(es.list),
		EventBytes: len(es.events.buf), EncodeSec: enc.took.Seconds(), ByTarget: map[string]*summary{}, WatchListed: true}
	logf("%s: encoded in %s: EndpointSlice list %s MiB, %d update events %s MiB (%d bytes each on average), %d names changed",
		s.Name, enc.took.Round(time.Millisecond), toolreport.MiB(int64(sr.ListBytes)), n, toolreport.MiB(int64(sr.EventBytes)),
		sr.EventBytes/max(n, 1), sr.Names)
	for round := range cfg.rounds {
		order := slices2(targets, round%2 == 1)
		for _, t := range order {
			if ctx.Err() != nil {
				return sr
			}
			logf("%s round %d/%d: %s", s.Name, round+1, cfg.rounds, t.Key)
			r, err := runOne(ctx, cfg, enc, t, round)
			if err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("%s round %d %s: %v", s.Name, round+1, t.Key, err))
				logf("  error: %v", err)
			}
			if r == nil || r.Seconds == 0 {
				continue
			}
			for _, bad := range verdicts(r) {
				res.Errors = append(res.Errors, fmt.Sprintf("%s round %d %s: %s", s.Name, round+1, t.Key, bad))
			}
			if r.Requests["WATCH-LIST endpointslices"] == 0 {
				sr.WatchListed = false
			}
			logRound(r)
			sr.Rounds = append(sr.Rounds, r)
		}
	}
	sr.tally()
	return sr
}

// tally sums up each target's rounds and sets the ratios of ours to
// stock.
func (sr *shapeResult) tally() {
	for _, t := range targets {
		sr.ByTarget[t.Key] = summarize(sr.Rounds, t.Key)
	}
	if o, st := sr.ByTarget[keyOurs], sr.ByTarget[keyStock]; o != nil && st != nil {
		sr.RatioRate, sr.RatioCPU = o.Rate/st.Rate, o.CPUPer/st.CPUPer
	}
}

// slices2 is ts, reversed when flip: the order of a round.
func slices2(ts []target, flip bool) []target {
	out := slices.Clone(ts)
	if flip {
		slices.Reverse(out)
	}
	return out
}

// verdicts are what fails a run besides an error: a wrong answer, a state
// older than one seen, a wrong SRV or PTR, a name stale at the end, a
// watch the server opened again during the run.
func verdicts(r *roundResult) []string {
	var bad []string
	c := r.Check
	if c.Wrong > 0 || c.Back > 0 || c.SpotWrong > 0 {
		bad = append(bad, fmt.Sprintf("%d wrong A answers, %d older than seen, %d wrong SRV/PTR; first: %s",
			c.Wrong, c.Back, c.SpotWrong, strings.Join(c.Examples, "; ")))
	}
	if c.Answers == 0 {
		bad = append(bad, "the model check got no answer")
	}
	if r.StaleAtEnd > 0 {
		bad = append(bad, fmt.Sprintf("%d names stale at the end", r.StaleAtEnd))
	}
	if n := r.Requests["WATCH-LIST endpointslices"] + r.Requests["WATCH endpointslices"] + r.Requests["LIST endpointslices"]; n > 2 {
		bad = append(bad, fmt.Sprintf("the EndpointSlices were listed or watched %d times: the server reconnected during the run (%v)", n, r.Requests))
	}
	return bad
}

func summarize(rounds []*roundResult, key string) *summary {
	var rates, cpus []float64
	s := &summary{}
	var secs []float64
	for _, r := range rounds {
		if r.Target != key {
			continue
		}
		rates, cpus, secs = append(rates, r.Rate), append(cpus, r.CPUPer), append(secs, r.Seconds)
		s.Check.Answers += r.Check.Answers
		s.Check.Wrong += r.Check.Wrong
		s.Check.Back += r.Check.Back
		s.Check.Spot += r.Check.Spot
		s.Check.SpotWrong += r.Check.SpotWrong
		s.Check.Errors += r.Check.Errors
		s.Check.Truncated += r.Check.Truncated
		s.StaleAtEnd += r.StaleAtEnd
		s.FoundStale += r.FoundStale
	}
	if len(rates) == 0 {
		return nil
	}
	s.Runs = len(rates)
	s.Rate, s.RateMin, s.RateMax = median(rates), slices.Min(rates), slices.Max(rates)
	s.CPUPer, s.CPUPerMin, s.CPUPerMax = median(cpus), slices.Min(cpus), slices.Max(cpus)
	s.Seconds = median(secs)
	total := 0.0
	for _, x := range secs {
		total += x
	}
	s.CheckRate = float64(s.Check.Answers) / total
	return s
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// logRound prints a run's figures.
func logRound(r *roundResult) {
	pct := toolreport.Percent
	c := r.Check
	logf("  %d updates in %.2f s: %.0f updates/s, %.1f µs CPU each (server busy %s, others on its core %s; "+
		"this tool %s, its core %s); fed in %.2f s; synced %.1f s after start; %d answers checked, %d wrong, "+
		"%d older than seen, %d SRV/PTR (%d wrong), %d found behind, %d stale",
		r.Updates, r.Seconds, r.Rate, r.CPUPer, pct(r.Busy), pct(r.Others), pct(r.Tool), pct(r.ToolCore), r.FeedSec,
		r.SyncSec, c.Answers, c.Wrong, c.Back, c.Spot, c.SpotWrong, r.FoundStale, r.StaleAtEnd)
}
