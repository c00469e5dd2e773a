package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schemadns/schemadns/bench/internal/mesosbench"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
)

// mesosFixture is a measured Mesos shape with made-up figures.
func mesosFixture(name string, unchangedMs, oneMs float64) *mesosbench.Result {
	sh := mesosbench.ShapesAt["default"][0]
	if name == "M2" {
		sh = mesosbench.ShapesAt["default"][1]
	}
	series := func(kind string, ms float64, results map[string]int, statesUnchanged int, serialAfter uint32) mesosbench.PollSeries {
		return mesosbench.PollSeries{Kind: kind, What: kind, Polls: 20, Seconds: 25, CPU: ms * 20 / 1e3, IdleCPU: 0.01,
			Results: results, StatesUnchanged: statesUnchanged, SerialBefore: 7, SerialAfter: serialAfter}
	}
	return &mesosbench.Result{
		Shape:  sh,
		State:  mesosbench.StateFacts{Running: 10000, Other: 500, Apps: 2200, Frameworks: 100, Agents: 500, JSONBytes: 18e6, GzipBytes: 1.2e6, Names: 33000, ZoneRecords: 90000},
		Memory: map[string]server.Memory{mesosbench.KeyMesos: {HeapInuse: 40 * mib, RSS: 90 * mib}, mesosbench.KeyFile: {HeapInuse: 60 * mib, RSS: 120 * mib}},
		Polls: []mesosbench.PollSeries{
			series(mesosbench.PollUnchanged, unchangedMs, map[string]int{"unchanged": 20}, 0, 7),
			series(mesosbench.PollSame, 300, map[string]int{"changed": 20}, 20, 7),
			series(mesosbench.PollOne, oneMs, map[string]int{"changed": 20}, 0, 30),
		},
		Latency: []mesosbench.AnswerTimes{{Kind: "one task replaced", Replaced: 1, Ms: []float64{400, 450, 900}, TransferMs: []float64{3, 3, 4}}},
		Perf: &perf.Figures{Rates: map[string]int{mesosbench.TestMix: 9000}, Order: map[string][]string{mesosbench.TestMix: {mesosbench.KeyMesos, mesosbench.KeyFile}},
			Runs: map[string]map[string][]perf.Result{mesosbench.TestMix: {
				mesosbench.KeyMesos: {{CPUPerQuery: 30, Sent: 10, Completed: 10}, {CPUPerQuery: 32, Sent: 10, Completed: 10}},
				mesosbench.KeyFile:  {{CPUPerQuery: 40, Sent: 10, Completed: 10}, {CPUPerQuery: 36, Sent: 10, Completed: 10}},
			}}},
	}
}

// (The idle process's 10 ms is netted out of each series' CPU.)
func TestMesosGoals(t *testing.T) {
	res := &results.Results{Mesos: []*mesosbench.Result{mesosFixture("M1", 40.5, 400.5), mesosFixture("M2", 60.5, 400.5)}}
	met := map[string]string{}
	for _, g := range mesosGoals(res) {
		met[g.Shape[:2]+" "+g.What[:12]] = g.Met
	}
	want := map[string]string{
		"M1 server CPU p": "met", "M2 server CPU p": "not met",
		"M1 unchanged po": "met", "M1 new bytes wi": "met",
	}
	for k, v := range want {
		if met[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, met[k], v, met)
		}
	}
	if got := mesosGoals(&results.Results{}); len(got) != 6 || got[0].Met != "not measured" {
		t.Errorf("no Mesos shape measured: %+v", got)
	}
	moved := mesosFixture("M1", 10, 400)
	moved.Polls[0].SerialAfter = 8
	for _, g := range mesosGoals(&results.Results{Mesos: []*mesosbench.Result{moved}}) {
		if strings.HasPrefix(g.What, "unchanged polls") && g.Shape[:2] == "M1" && g.Met != "not met" {
			t.Errorf("a serial that moved during unchanged polls: %s", g.Met)
		}
	}
}

// A Mesos-only run writes the Mesos section and leaves the chart of the
// cluster shapes alone.
func TestMesosReport(t *testing.T) {
	res := &results.Results{Started: time.Now(), Finished: time.Now(), Scale: "default",
		Mesos: []*mesosbench.Result{mesosFixture("M1", 40, 400), mesosFixture("M2", 60, 500)}, Targets: map[string]string{mesosbench.KeyMesos: "ours"}}
	page := markdown(res)
	for _, want := range []string{"## Mesos", "### Mesos shapes", "M2 is the worst case", "### M1: Mesos mix over UDP at 9000 queries/s",
		"| M1 | unchanged |", "best 0.75, worst 0.89", "make bench SHAPES=M1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, unwanted := range []string{"## Shapes", "benchmarks.svg)", "## How it is measured"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("a Mesos-only page has %q", unwanted)
		}
	}
	dir := t.TempDir()
	if err := Write(dir, res); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "benchmarks.svg")); !os.IsNotExist(err) {
		t.Errorf("a Mesos-only run wrote the chart: %v", err)
	}
	if err := Rewrite(dir); err != nil {
		t.Fatalf("rewrite from the JSON: %v", err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "benchmarks.md"))
	if string(again) != page {
		t.Error("the page written again from benchmarks.json differs")
	}
}
